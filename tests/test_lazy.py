"""Names of a package imported on first use (:func:`mlgp.lazy.lazy_names`)."""

from __future__ import annotations

import sys

import pytest


def test_a_name_is_imported_on_first_use_and_kept(tmp_path, monkeypatch) -> None:
    package = tmp_path / "lazypkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from mlgp.lazy import lazy_names\n__all__ = ['Thing']\n"
        "__getattr__, __dir__ = lazy_names(__name__, {'Thing': '.heavy'}, __all__)\n")
    (package / "heavy.py").write_text("class Thing:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lazypkg

    try:
        assert "lazypkg.heavy" not in sys.modules and "Thing" in dir(lazypkg)
        from lazypkg import Thing

        assert "lazypkg.heavy" in sys.modules and Thing is sys.modules["lazypkg.heavy"].Thing
        assert vars(lazypkg)["Thing"] is Thing  # kept: the next use asks no __getattr__
        with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'Other'"):
            lazypkg.Other
    finally:
        for name in ("lazypkg", "lazypkg.heavy"):
            sys.modules.pop(name, None)
