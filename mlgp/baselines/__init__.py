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
"""

from ._kernel_basis import median_heuristic
from ._sylvester import pearson_similarity
from .fastxml import FastXML
from .frequency import LabelFrequency
from .lspc import LSPC
from .mlknn import MLkNN
from .mllspc import MLLSPC
from .mllspc_cv import MLLSPCCV
from .pfastxml import PfastreXML, PfastXML

__all__ = ["FastXML", "PfastXML", "PfastreXML", "LSPC", "LabelFrequency", "MLLSPC", "MLLSPCCV", "MLkNN", "median_heuristic", "pearson_similarity"]
