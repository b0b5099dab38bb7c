"""A parameter that is a path (MLGPFClassifier's ``checkpoint_dir``, ``log_dir``) is written as a
path and read back as one — not as an unsaved value (which loads as the default, with a warning)."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath

from mlgp.estimator import persistence


def test_a_path_parameter_round_trips(tmp_path) -> None:
    for value in (tmp_path / "runs" / "a", PurePosixPath("relative/ckpt"), (Path("x"), 2)):
        encoded = persistence._encode(value)
        assert encoded is not persistence._DEFAULT, value
        decoded = persistence._decode(json.loads(json.dumps(encoded)), tmp_path / "m.npz")
        assert decoded == (value if not isinstance(value, PurePosixPath) else Path(value))
    assert isinstance(persistence._decode({"path": "a/b"}, tmp_path), Path)
