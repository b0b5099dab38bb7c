"""The per-test-row values of a comparison: what the paired bootstrap of
:func:`mlgp.comparison.ranks.paired_bootstrap` resamples, and the file that keeps them.

Contract: for a family that ran, :func:`ranking_rows` gives each test row's ``P@k`` (the fraction of
its k top labels that are positive), ``nDCG@k`` (its DCG@k over the ideal DCG of min(k, |y_i|) ones)
and ``PSP@k`` for k in 1, 3, 5 up to K, from the same ranking and the same hits as
:func:`mlgp.metrics.evaluate`, so that ``100 ×`` their mean is the column. PSP@k is a ratio of means
(:mod:`mlgp.metrics._ranking`); its row value is the row's propensity-weighted precision divided by
the mean over rows of the best achievable one — a denominator that depends on the test labels only,
the same for every family, so differences between families are differences of means.
:func:`log_density_rows` gives each test row's log predictive
density ``Σ_k log p(y_ik)`` with the clipping of :mod:`mlgp.metrics._probabilistic` (so their mean is
the ``LPD`` column, to rounding). A family without probabilities has no ``LPD`` rows.

The rows of a finished family are kept beside its run file as ``out/runs/<family>.rows.npz`` (one
float64 array of shape (N_test,) per measure, named as the measure), written atomically *before* the
run file; :func:`read_rows` takes them back only when they are whole: exactly the measures the
family's row implies, each 1-D, finite, of N_test entries, within its range (P@k a multiple of 1/k in
[0, 1], nDCG@k in [0, 1], PSP@k ≥ 0, LPD ≤ 0) and agreeing with the row's column (the mean within
1e-6 of ``P@k / 100`` (likewise nDCG@k, PSP@k) and of ``LPD``, relative). A rows file written before
nDCG@k and PSP@k were kept lacks them, and the family is fitted again. Anything else raises :class:`BrokenRows` saying why.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

__all__ = ["BrokenRows", "MEASURES", "expected_measures", "log_density_rows", "ranking_rows", "read_rows",
           "rows_file", "save_rows"]

#: The cut-offs of the per-row ranking measures.
KS = (1, 3, 5)
#: The ranking measures that have per-row values, in this order.
_RANKING = tuple(f"{m}@{k}" for m in ("P", "nDCG", "PSP") for k in KS)
#: The measures that have per-row values, in this order.
MEASURES = (*_RANKING, "LPD")


class BrokenRows(ValueError):
    """A rows file that cannot be used; the message says why."""


def _cut_off(measure: str) -> int:
    """The k of ``"P@k"``, ``"nDCG@k"`` or ``"PSP@k"``."""
    return int(measure.rsplit("@", 1)[1])


def ranking_rows(Y_test, top, inv_propensity: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """Each test row's ``P@k``, ``nDCG@k`` and (with ``inv_propensity``) ``PSP@k``, k in 1, 3, 5 up to K.

    Parameters
    ----------
    Y_test : scipy.sparse matrix (N, K)
        0/1 test labels.
    top : mlgp.scores.TopK
        The ranking, (N, k) with k ≥ min(5, K).
    inv_propensity : numpy.ndarray (K,), optional
        Inverse propensities of PSP@k (none without them).

    Returns
    -------
    dict of str to numpy.ndarray
        Measure → (N,) fractions; their means are :func:`mlgp.metrics.evaluate`'s columns / 100.
    """
    from ..metrics import rank_against
    from ..metrics._labels import safe_div
    from ..metrics import dcg_discounts, ideal_dcg

    ks = [k for k in KS if k <= Y_test.shape[1]]
    ranked = rank_against(Y_test, top, max(ks))
    hits, out = ranked.hits, {}
    for k in ks:
        out[f"P@{k}"] = hits[:, :k].sum(axis=1) / k
    for k in ks:
        out[f"nDCG@{k}"] = safe_div(hits[:, :k] @ dcg_discounts(k), ideal_dcg(ranked.Y, k))
    if inv_propensity is not None:
        w = np.asarray(inv_propensity, dtype=np.float64)
        for k in ks:
            gained = (hits[:, :k] * w[ranked.t.indices[:, :k]]).sum(axis=1)
            best = ranked.ideal(k, w).sum(axis=1).mean()
            out[f"PSP@{k}"] = gained / best if best > 0 else np.zeros_like(gained)
    return {m: out[m] for m in _RANKING if m in out}


def log_density_rows(Y_test, P: np.ndarray) -> np.ndarray:
    """Each test row's log predictive density ``Σ_k log p(y_ik)`` (nats), p clipped to [ε, 1 − ε].

    Parameters
    ----------
    Y_test : scipy.sparse matrix (N, K)
        0/1 test labels.
    P : numpy.ndarray (N, K)
        Probabilities (``predict_proba``).

    Returns
    -------
    numpy.ndarray (N,)
        Their mean is :func:`mlgp.metrics.evaluate_proba`'s ``log_predictive_density``.
    """
    import scipy.sparse as sp

    from ..metrics._probabilistic import EPS

    Y = sp.csr_matrix(Y_test)
    out = np.empty(Y.shape[0])
    for start in range(0, Y.shape[0], 1024):  # a block of rows at a time: one (B, K) temporary
        q = np.clip(np.asarray(P[start:start + 1024], dtype=np.float64), EPS, 1.0 - EPS)
        y = Y[start:start + 1024].toarray() > 0
        out[start:start + len(q)] = np.where(y, np.log(q), np.log1p(-q)).sum(axis=1)
    return out


def rows_file(out: Path, name: str) -> Path:
    """The rows file of family ``name`` under the comparison's folder ``out``."""
    return out / "runs" / f"{name}.rows.npz"


def save_rows(out: Path, name: str, rows: dict[str, np.ndarray]) -> Path:
    """Write ``rows`` (measure → (N,) array) to :func:`rows_file` atomically; returns its path."""
    from ..files import atomic_write

    buffer = io.BytesIO()
    np.savez(buffer, **{m: np.asarray(v, dtype=np.float64) for m, v in rows.items()})
    data = buffer.getvalue()
    (out / "runs").mkdir(parents=True, exist_ok=True)
    return atomic_write(rows_file(out, name), lambda f: f.write(data))


def expected_measures(row: dict, num_labels: int) -> list[str]:
    """The measures whose rows a family's ``row`` implies: P@k, nDCG@k and PSP@k for k ≤ K (PSP@k
    where the row has it), LPD unless it has no probabilities (a ``proba_note``)."""
    out = [m for m in _RANKING if _cut_off(m) <= num_labels and (not m.startswith("PSP") or m in row)]
    return out + ([] if "proba_note" in row else ["LPD"])


def read_rows(out: Path, name: str, row: dict, num_rows: int, num_labels: int) -> dict[str, np.ndarray]:
    """The rows of family ``name`` kept under ``out``, checked against its ``row`` (module docstring).

    Parameters
    ----------
    out : Path
        The comparison's folder.
    name : str
        The family.
    row : dict
        Its row of the results (the columns the rows must agree with).
    num_rows, num_labels : int
        N_test and K.

    Returns
    -------
    dict of str to numpy.ndarray
        Measure → (N_test,) float64.

    Raises
    ------
    BrokenRows
        When the file is missing or not whole.
    """
    from ..errors import DataFormatError
    from ..files import read_npz

    path = rows_file(out, name)
    if not path.is_file():
        raise BrokenRows(f"its rows file {path.name} is missing")
    try:
        arrays = read_npz(path, "rows file")
    except DataFormatError as err:
        raise BrokenRows(f"its rows file {path.name} does not read ({str(err).splitlines()[0][:80]})") from None
    wanted = expected_measures(row, num_labels)
    if sorted(arrays) != sorted(wanted):
        raise BrokenRows(f"its rows file holds {sorted(arrays)}, not {sorted(wanted)}")
    for measure in wanted:
        _check(measure, arrays[measure], row, num_rows)
    return {m: arrays[m].astype(np.float64) for m in wanted}


def _check(measure: str, values: np.ndarray, row: dict, num_rows: int) -> None:
    """Raise :class:`BrokenRows` unless ``values`` are ``num_rows`` whole rows of ``measure`` agreeing
    with ``row``."""
    what = f"the {measure} rows"
    if values.shape != (num_rows,) or values.dtype.kind != "f":
        raise BrokenRows(f"{what} have shape {values.shape} and dtype {values.dtype}, not ({num_rows},) floats")
    if not np.isfinite(values).all():
        raise BrokenRows(f"{what} are not all finite")
    if measure.startswith("P@"):
        k = _cut_off(measure)
        if values.min(initial=0.0) < 0 or values.max(initial=0.0) > 1 or \
                not np.allclose(values * k, np.round(values * k), rtol=0, atol=1e-9):
            raise BrokenRows(f"{what} are not multiples of 1/{k} in [0, 1]")
        mean, column = 100.0 * values.mean(), row[measure]
    elif measure in _RANKING:
        if values.min(initial=0.0) < 0 or (measure.startswith("nDCG") and values.max(initial=0.0) > 1 + 1e-12):
            raise BrokenRows(f"{what} are not " + ("in [0, 1]" if measure.startswith("nDCG") else "all ≥ 0"))
        mean, column = 100.0 * values.mean(), row[measure]
    else:
        if values.max(initial=0.0) > 0:
            raise BrokenRows(f"{what} are not all ≤ 0")
        mean, column = values.mean(), row[measure]
    if not abs(mean - column) <= 1e-6 * max(1.0, abs(column)):
        raise BrokenRows(f"{what} have the mean {mean:.6g}; the row's {measure} is {column:.6g}")
