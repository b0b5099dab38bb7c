"""Sphinx configuration of the mlgp documentation.

Build with ``python -m sphinx -b html docs docs/_build/html`` (needs the ``docs`` extra). Pages are
MyST Markdown; notebooks under ``notebooks/`` are MyST-NB text notebooks (jupytext "md:myst"
format). They are not executed during the build (``nb_execution_mode = "off"``): the test suite
runs their code cells instead (``tests/docs/test_docs.py``).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import mlgp  # noqa: E402

project = "mlgp"
author = "the mlgp developers"
copyright = "2026, the mlgp developers"
release = mlgp.__version__
version = release

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]

# MyST / MyST-NB
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

source_suffix = {".md": "myst-nb", ".ipynb": "myst-nb", ".rst": "restructuredtext"}
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/.ipynb_checkpoints"]

# autodoc / napoleon (the package's docstrings are NumPy style)
autodoc_default_options = {"members": True, "show-inheritance": True, "member-order": "bysource"}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
napoleon_use_ivar = True  # "Attributes" sections as fields, not duplicates of autodoc's members

html_theme = "alabaster"
html_title = f"mlgp {release}"
html_static_path: list[str] = []


# Docstrings write set sizes as |B|, |N_i|, |L_i| (plain text, as in the papers). In
# reStructuredText ``|name|`` is a substitution reference, so escape such bars outside inline
# literals before autodoc parses the docstring.
_SET_SIZE = re.compile(r"(?<![\\|`\w])\|([A-Za-z][\w]*)\|(?![\w|`])")


def _escape_set_sizes(app, what, name, obj, options, lines):
    for n, line in enumerate(lines):
        parts = line.split("``")
        parts[::2] = [_SET_SIZE.sub(r"\\|\1\\|", part) for part in parts[::2]]
        lines[n] = "``".join(parts)


def setup(app):
    app.connect("autodoc-process-docstring", _escape_set_sizes)
