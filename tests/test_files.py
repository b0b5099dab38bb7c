"""atomic_write: the target is either untouched or whole, and no temporary file is left behind."""

from __future__ import annotations

import pytest

from mlgp.files import atomic_write


def test_the_content_replaces_the_file_whole(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")
    assert atomic_write(path, lambda f: f.write(b"new content")) == path
    assert path.read_bytes() == b"new content" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]


@pytest.mark.parametrize("error", [OSError("disk full"), KeyboardInterrupt()])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, error):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")

    def half(f):
        f.write(b"half of the ne")
        raise error

    with pytest.raises(type(error), match="disk full" if isinstance(error, OSError) else "^$"):
        atomic_write(path, half)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]
