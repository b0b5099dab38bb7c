"""The worker of tests/reliability/test_fuzz_saved_models.py, run as a script in its own process:

    python _fuzz_saved_worker.py {estimators,mlgpf} --seed S --cases N --report FILE --progress FILE

``estimators``: every estimator of ``tests/estimator/_small.py`` (and MLkNN fitted on CSR features,
whose file holds a CSR matrix); ``mlgpf``: a small ``mlgpf_from_data`` model, with and without an
input map (so with and without ``constants.npz``). Each is saved once; then ``N`` corrupted copies
(:mod:`_fuzz_mutations`, seeded by ``S``, the targets in turn) are loaded, and every one must either
be refused with :class:`~mlgp.errors.DataFormatError` naming the path (for MLGPF also
:class:`~mlgp.errors.ModelNotFoundError`, a file the save names being absent) or load and score a
small X with finite results of the right shape and no exception. A copy whose ``.npz`` bytes were
mutated as a whole (not rewritten as a valid zip) must be refused or score exactly as the original.
(``model.json`` is text without a checksum, by design editable: its mutations follow the weaker rule.)

Before each case the worker appends ``index, target, mutation`` to the progress file, so that the
test can name the case of a crash or a hang. The report is JSON: the number of cases, outcome
counts, how many cases each kind of mutation made (:func:`_fuzz_mutations.kind_of`), and every failure as
``{"target", "mutation", "error"}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "estimator")]

from _fuzz_mutations import (flip_in_member, kind_of, mutate_arrays, mutate_bytes, mutate_json, read_npz,  # noqa: E402
                             write_npz)

from mlgp.errors import DataFormatError, ModelNotFoundError  # noqa: E402

HEADER = "__header__"


class Failure(Exception):
    """A case that broke the rule (the message says how)."""


# -------------------------------------------------------------------------------- checking --
def _check_scores(name: str, values, shape: tuple, low: float | None = None, high: float | None = None) -> None:
    values = np.asarray(values)
    if values.shape != shape:
        raise Failure(f"{name} has shape {values.shape}, expected {shape}")
    if values.dtype.kind not in "fiub" or not np.all(np.isfinite(values)):
        raise Failure(f"{name} is not finite ({values.dtype})")
    if values.size and ((low is not None and values.min() < low) or (high is not None and values.max() > high)):
        raise Failure(f"{name} outside [{low}, {high}]")


def _topk(top, n: int, k: int, width: int) -> None:
    _check_scores("predict_topk scores", top.scores, (n, k))
    if top.indices.shape != (n, k) or top.indices.min() < 0 or top.indices.max() >= width:
        raise Failure(f"predict_topk indices {top.indices.shape} out of [0, {width})")


def _refused(err: Exception, path: Path, allowed: tuple) -> str:
    if not isinstance(err, allowed):
        raise Failure(f"{type(err).__name__}: {err}")
    if str(path) not in str(err):
        raise Failure(f"{type(err).__name__} does not name {path}: {err}")
    return "refused"


def check_estimator(cls, path: Path, reference: dict, strong: bool) -> str:
    """The outcome of loading ``path`` ("refused", "identical" or "loaded"); :class:`Failure` if the rule breaks."""
    try:
        est = cls.load(path)
    except Exception as err:  # noqa: BLE001 - which exception is the point
        return _refused(err, path, (DataFormatError,))
    try:
        D, W = int(est.n_features_in_), int(est._n_outputs)
        if D > 10 ** 7:
            return "loaded (too wide to score)"
        X = reference["X"] if D == reference["X"].shape[1] else sp.random(3, D, density=min(1.0, 10 / D), format="csr",
                                                                         random_state=0)
        n = X.shape[0]
        scores = est.decision_function(X)
        if not (W == 2 and scores.shape == (n,)):
            _check_scores("decision_function", scores, (n, W))
        k = min(2, W)
        top = est.predict_topk(X, k)
        _topk(top, n, k, W)
        if hasattr(est, "predict_proba"):
            _check_scores("predict_proba", est.predict_proba(X), (n, W), 0.0, 1.0)
        est.predict(X)
    except Failure:
        raise
    except Exception as err:  # noqa: BLE001
        raise Failure(f"loaded, then scoring raised {type(err).__name__}: {err}") from None
    same = scores.shape == reference["scores"].shape and np.array_equal(scores, reference["scores"]) \
        and np.array_equal(top.indices, reference["top"].indices) and np.array_equal(top.scores, reference["top"].scores)
    if strong and not same:
        raise Failure("a corrupted file loaded with other scores than the saved model's")
    return "identical" if same else "loaded"


def _mlgpf_scores(model, X, k: int):
    """The top ``k`` mean utilities and the label probabilities of raw rows ``X``, from the model's
    own functions of its mapped inputs (a folder whose ``num_data`` was mutated to null loads, and
    the estimator around a model needs it)."""
    from mlgp.scores import topk

    inputs = model.model_inputs(X)
    return topk(model.mean_utilities(inputs), k), model.label_probabilities(inputs)


def check_mlgpf(folder: Path, reference: dict, strong: bool) -> str:
    """As :func:`check_estimator` for an MLGPF save folder."""
    from mlgp.models import MLGPF

    try:
        model = MLGPF.load(folder)
    except Exception as err:  # noqa: BLE001
        return _refused(err, folder, (DataFormatError, ModelNotFoundError))
    X = reference["X"]
    try:
        K = int(model.num_labels)
        if int(model.num_features) != X.shape[1]:
            X = np.random.default_rng(0).random((X.shape[0], min(int(model.num_features), 10 ** 5)))
        n, k = X.shape[0], min(2, K)
        top, proba = _mlgpf_scores(model, X, k)
        _topk(top, n, k, K)
        _check_scores("predict_proba", proba, (n, K), -1e-12, 1.0 + 1e-12)  # quadrature: 1 + ulp happens
    except Failure:
        raise
    except Exception as err:  # noqa: BLE001
        raise Failure(f"loaded, then scoring raised {type(err).__name__}: {err}") from None
    same = proba.shape == reference["proba"].shape and np.array_equal(proba, reference["proba"]) \
        and np.array_equal(top.indices, reference["top"].indices) and np.array_equal(top.scores, reference["top"].scores)
    if strong and not same:
        raise Failure("a corrupted file loaded with other scores than the saved model's")
    return "identical" if same else "loaded"


# ---------------------------------------------------------------------------------- targets --
def estimator_targets(workdir: Path) -> list[dict]:
    from _small import SMALL, data, fit_small

    X = data(seed=1, N=7)[0]
    targets = []
    for name, sparse in [*((n, False) for n in sorted(SMALL)), ("MLkNN", True)]:
        est = fit_small(name, sparse)
        path = est.save(workdir / f"{name}{'-csr' if sparse else ''}.npz")
        targets.append({"name": path.stem, "cls": type(est), "files": {path.name: path.read_bytes()},
                        "X": X, "scores": est.decision_function(X), "top": est.predict_topk(X, 2)})
    return targets


def mlgpf_targets(workdir: Path) -> list[dict]:
    from mlgp.blocks import LinearInputMap
    from mlgp.models import mlgpf_from_data

    rng = np.random.default_rng(5)
    X = rng.random((24, 6)) * (rng.random((24, 6)) < 0.7)
    Y = (rng.random((24, 4)) < 0.4).astype(np.int64)
    Y[np.arange(24), rng.integers(0, 4, size=24)] = 1
    projection = sp.csr_matrix((rng.choice([-1.0, 1.0], size=6), (np.arange(6), rng.integers(0, 3, size=6))), shape=(6, 3))
    models = {"MLGPF": mlgpf_from_data(X, Y, num_latent_gps=2, num_inducing=5),
              "MLGPF-map": mlgpf_from_data(sp.csr_matrix(X), Y, num_latent_gps=2, num_inducing=5,
                                           input_map=LinearInputMap(projection))}
    targets = []
    for name, model in models.items():
        folder = model.save(workdir / name)
        Xs = X[:5]
        targets.append({"name": name, "files": {p.name: p.read_bytes() for p in sorted(folder.iterdir())},
                        "X": Xs, **dict(zip(("top", "proba"), _mlgpf_scores(model, Xs, 2)))})
    return targets


# -------------------------------------------------------------------------------- mutations --
def mutate_estimator_file(data: bytes, rng: np.random.Generator) -> tuple[str, bytes, bool]:
    """(description, new bytes, whether the strong rule holds)."""
    u = rng.random()
    if u < 0.2:
        return (*mutate_bytes(data, rng), True)
    if u < 0.3:
        return (*flip_in_member(data, rng), False)
    arrays = read_npz(data)
    header = json.loads(str(arrays[HEADER]))
    if u < 0.5:
        what, header = mutate_json(header, rng, roots=(("params",), ("fitted",), ("sparse",)) if rng.random() < 0.9 else ())
    else:
        what, arrays = mutate_arrays(arrays, rng, protected=(HEADER,))
    arrays[HEADER] = np.array(json.dumps(header))
    return what, write_npz(arrays), False


def mutate_mlgpf_file(name: str, data: bytes, rng: np.random.Generator) -> tuple[str, bytes, bool]:
    u = rng.random()
    if name.endswith(".json"):
        if u < 0.3:
            return (*mutate_bytes(data, rng), False)
        what, doc = mutate_json(json.loads(data), rng)
        return what, json.dumps(doc, indent=2).encode(), False
    if u < 0.25:
        return (*mutate_bytes(data, rng), True)
    if u < 0.4:
        return (*flip_in_member(data, rng), False)
    what, arrays = mutate_arrays(read_npz(data), rng)
    return what, write_npz(arrays), False


# ------------------------------------------------------------------------------------- main --
def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("family", choices=["estimators", "mlgpf"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--report", type=Path, required=True)
    parser.add_argument("--progress", type=Path, required=True)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    outcomes: dict[str, int] = {}
    kinds: dict[str, int] = {}
    failures = []
    with tempfile.TemporaryDirectory() as tmp, open(args.progress, "w", buffering=1) as progress:
        work = Path(tmp)
        (work / "saved").mkdir()
        targets = estimator_targets(work / "saved") if args.family == "estimators" else mlgpf_targets(work / "saved")
        for i in range(args.cases):
            target = targets[i % len(targets)]
            files = dict(target["files"])
            victim = sorted(files)[int(rng.integers(0, len(files)))]
            progress.write(f"{i}\t{target['name']}\t{victim}: (mutating)\n")
            if args.family == "estimators":
                what, files[victim], strong = mutate_estimator_file(files[victim], rng)
            else:
                what, files[victim], strong = mutate_mlgpf_file(victim, files[victim], rng)
            case = f"{victim}: {what}"
            kind = kind_of(what)
            kinds[kind] = kinds.get(kind, 0) + 1
            progress.write(f"{i}\t{target['name']}\t{case}\n")
            folder = work / f"case{i}"
            folder.mkdir()
            for name, content in files.items():
                (folder / name).write_bytes(content)
            try:
                if args.family == "estimators":
                    outcome = check_estimator(target["cls"], folder / victim, target, strong)
                else:
                    outcome = check_mlgpf(folder, target, strong)
            except Failure as err:
                outcome = "failed"
                failures.append({"target": target["name"], "mutation": case, "error": str(err)[:500]})
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            for p in folder.iterdir():
                p.unlink()
            folder.rmdir()
    report = {"family": args.family, "cases": args.cases, "outcomes": outcomes, "kinds": kinds, "failures": failures,
              "seconds": round(time.perf_counter() - started, 1)}
    args.report.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.exit(main())
