"""The trees' progress goes through the one :class:`mlgp.estimator.progress.Progress`: off a
terminal, lines named for the class (no tqdm bar drawn with carriage returns into a log)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from mlgp.baselines import FastXML, PfastXML


def _data():
    rng = np.random.default_rng(0)
    X = sp.random(60, 12, density=0.3, random_state=1, format="csr")
    Y = sp.csr_matrix((rng.random((60, 5)) < 0.3).astype(np.int8))
    return X, Y


def test_off_a_terminal_the_trees_print_lines_named_for_the_class(capsys) -> None:
    X, Y = _data()
    for cls in (FastXML, PfastXML):
        cls(n_estimators=3, n_jobs=1, random_state=0).fit(X, Y, progress=True)
        err = capsys.readouterr().err
        name = cls.__name__
        lines = err.splitlines()
        assert lines[0] == f"{name} trees: started, 3 trees", err
        assert lines[1].startswith(f"{name} trees: tree 1/3, ") and lines[-1].startswith(f"{name} trees: tree 3/3, ")
        assert "\r" not in err and "%|" not in err


def test_without_progress_nothing_is_printed(capsys) -> None:
    X, Y = _data()
    FastXML(n_estimators=2, n_jobs=1, random_state=0).fit(X, Y)
    assert capsys.readouterr().err == ""
