"""Sphinx configuration of the mlgp documentation.

Build with ``MLGP_DATA=/path/to/data python -m sphinx -W --keep-going -b html docs docs/_build/html``
(needs the ``docs`` extra). Pages are MyST Markdown; notebooks under ``notebooks/`` are MyST-NB text
notebooks (jupytext "md:myst" format). The build executes them (``nb_execution_mode = "cache"``) so
that the pages show their outputs and plots: each notebook runs in a Jupyter kernel (ipykernel) in its
own folder, with this process's environment, so ``MLGP_DATA`` must name the benchmark data (a
relative path is taken from the folder the build was started in). Outputs
are kept in a jupyter-cache under ``docs/_build/.jupyter_cache`` and a notebook is executed again
only when its code changes; a cell that raises, or one running past ``nb_execution_timeout``
seconds, fails the build. ``-D nb_execution_mode=off`` builds without executing (the test suite
does that: ``tests/docs/test_docs.py`` runs every notebook's code cells itself, once).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
# the notebooks run in their own folders, and Sphinx reads this file from docs/: a relative data home
# is taken from the folder the build was started in (the shell's $PWD; the repository without one)
if os.environ.get("MLGP_DATA") and not os.path.isabs(os.environ["MLGP_DATA"]):
    os.environ["MLGP_DATA"] = os.path.abspath(os.path.join(os.environ.get("PWD") or str(ROOT),
                                                           os.environ["MLGP_DATA"]))

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

# MyST / MyST-NB: execute the notebooks, caching their outputs (see the module docstring)
nb_execution_mode = "cache"
nb_execution_cache_path = str(ROOT / "docs" / "_build" / ".jupyter_cache")
nb_execution_timeout = 600  # seconds per cell
nb_execution_raise_on_error = True
nb_execution_show_tb = True  # a failing cell's traceback goes to the build log
# The kernels' stderr is TensorFlow's start-up log and tqdm's notices: left off the pages (a cell
# that raises still fails the build; the test suite runs the same cells and shows their warnings).
nb_output_stderr = "remove"
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
