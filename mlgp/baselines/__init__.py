"""Classical multi-label baselines as scikit-learn estimators on NumPy/SciPy.

Contract: every estimator here is a :class:`mlgp.estimator.MultiLabelEstimator` and follows
scikit-learn's conventions (keyword-only ``__init__`` parameters, only stored; ``fit(X, Y)``
validates once through ``_validate_fit_data`` and returns ``self``; learned attributes end in
``_``; ``get_params`` / ``set_params`` / ``clone`` work). The shared scoring interface comes from
that base: ``decision_function(X)`` → dense (N, K) scores and ``predict_topk(X, k)`` →
:class:`mlgp.scores.TopK`, both computed in batches by :func:`mlgp.scores.score_in_batches` for
CSR or dense ``X``; ``save(path)`` / ``Class.load(path)`` write and read one ``.npz`` file without
pickle. This package imports neither TensorFlow nor the GP modules (kernels, inducing, likelihoods,
variational, models, training); it meets the rest of mlgp only in ``estimator``, ``data``,
``scores``, ``metrics``, ``validation`` and ``errors``. :class:`LabelFrequency` is the template.
Each class is imported when first asked for (``from mlgp.baselines import MLkNN`` imports ML-kNN's
module alone).
"""

from __future__ import annotations

from ..lazy import lazy_names

#: each public name → the module that defines it, imported on first use (PEP 562), so that a
#: command using one family does not import the others (FastXML's compiled kernels need numba)
_WHERE = {"median_heuristic": "._kernel_basis", "pearson_similarity": "._sylvester", "FastXML": ".fastxml",
          "LabelFrequency": ".frequency", "LSPC": ".lspc", "MLkNN": ".mlknn", "MLLSPC": ".mllspc",
          "MLLSPCCV": ".mllspc_cv", "PfastXML": ".pfastxml", "PfastreXML": ".pfastxml"}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(__name__, _WHERE, __all__)
