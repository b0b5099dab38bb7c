"""Every family as one estimator, compared in one call: the family registry
(:mod:`mlgp.families`, re-exported here), :func:`compare` (:mod:`mlgp.comparison.run`, the loop over the
families), fitting one family in a process of its own (:mod:`mlgp.comparison.isolation`,
:mod:`mlgp.comparison.worker`), the run files a comparison resumes from
(:mod:`mlgp.comparison.resume`), the traces (:mod:`mlgp.comparison.traces`) and the files of the
report (:mod:`mlgp.comparison.report`). This package combines the families (like ``mlgp.recipes``
and ``mlgp.cli``); naming a tree or LSPC family imports no TensorFlow.
"""

from __future__ import annotations

from ..families import FAMILIES, Family, make_estimator
from .report import probability_table_text, table_text, write_report
from .run import Comparison, compare

__all__ = ["FAMILIES", "Comparison", "Family", "compare", "make_estimator", "probability_table_text", "table_text",
           "write_report"]
