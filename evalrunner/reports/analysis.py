"""Problems (what needs fixing) and insights (what is worth knowing) of one run, derived from
its :class:`ReportData` alone: the rules are in :mod:`~evalrunner.reports.problems` and
:mod:`~evalrunner.reports.insights`; this module names the entry points callers use."""

from __future__ import annotations

from evalrunner.reports._analysis_common import normalize_reason
from evalrunner.reports.insights import find_insights
from evalrunner.reports.problems import find_problems

__all__ = ["find_insights", "find_problems", "normalize_reason"]
