"""Every family as one estimator, compared in one call: the family registry
(:mod:`mlgp.families`, re-exported here), :func:`compare` (:mod:`mlgp.comparison.run`, the loop over the
families; its arguments checked by :mod:`mlgp.comparison.checks`), fitting one family in a process
of its own (:mod:`mlgp.comparison.isolation`, :mod:`mlgp.comparison.worker`), the run files a comparison resumes from
(:mod:`mlgp.comparison.resume`) and the per-test-row values kept beside them
(:mod:`mlgp.comparison.rows`), the traces (:mod:`mlgp.comparison.traces`) and the files of the
report (:mod:`mlgp.comparison.report`). Over many data sets: :func:`compare_many`
(:mod:`mlgp.comparison.many`), its statistics — mean ranks, the Friedman test, the Nemenyi critical
difference, the paired bootstrap over test rows (:mod:`mlgp.comparison.ranks`) — and its summary
files (:mod:`mlgp.comparison.summary`, :mod:`mlgp.comparison.cd_diagram`). This package combines the
families (like ``mlgp.recipes`` and ``mlgp.cli``); naming a tree or LSPC family imports no TensorFlow.
"""

from __future__ import annotations

from ..families import FAMILIES, Family, make_estimator
from .many import ManyComparison, compare_many
from .ranks import FriedmanResult, cliques, critical_difference, friedman, paired_bootstrap, q_alpha, rank_table
from .report import probability_table_text, table_text, write_report
from .run import Comparison, compare
from .summary import write_summary

__all__ = ["FAMILIES", "Comparison", "Family", "FriedmanResult", "ManyComparison", "cliques", "compare",
           "compare_many", "critical_difference", "friedman", "make_estimator", "paired_bootstrap",
           "probability_table_text", "q_alpha", "rank_table", "table_text", "write_report", "write_summary"]
