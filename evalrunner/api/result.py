"""A finished run as a notebook or a script sees it: the summary, the per-case details and
per-metric results as pandas DataFrames, the problems, where the report is, and a verdict.

The DataFrames are built from the run's ``report.json`` (the typed report data) with the
columns of ``details.csv`` and ``result.csv``, so a cell reads the same in both, minus the
spreadsheet formula escaping the CSVs need.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from evalrunner.reports.model import ReportData
from evalrunner.reports.summary import RunSummary, SummaryProblem
from evalrunner.reports.verdict import RunVerdict

if TYPE_CHECKING:
    import pandas as pd

    from evalrunner.engine.run_types import RunResult


@dataclass
class EvalRun:
    """One finished run of :func:`evalrunner.evaluate` or :func:`evalrunner.start_aws`."""

    #: what the engine returned: the summary, the report files, the execution
    result: RunResult

    @property
    def summary(self) -> RunSummary:
        """The run summary (``summary.json``): counts, per-metric statistics, gates,
        regression verdict, problems."""
        return self.result.summary

    @property
    def problems(self) -> list[SummaryProblem]:
        """The problems found, most severe first (``problems.json`` has every affected case)."""
        return self.summary.problems

    @property
    def out_dir(self) -> Path:
        return self.result.out_dir

    @property
    def report_path(self) -> Path:
        """``report.html``: the page to open."""
        return self.out_dir / self.summary.reports.html

    @property
    def verdict(self) -> RunVerdict:
        """The run's verdict (passed, failed, regressed, not measured, partial) with its
        reasons: the one the CLI's exit code, the reports and CI files show."""
        return self.summary.verdict

    @property
    def passed(self) -> bool:
        """True when the run's verdict is a pass: the CLI's exit code 0 for the same run."""
        return self.summary.verdict.passed

    @cached_property
    def report(self) -> ReportData:
        """The whole report data (``report.json``)."""
        return ReportData.model_validate_json(
            (self.out_dir / self.summary.reports.report).read_bytes()
        )

    @cached_property
    def details(self) -> pd.DataFrame:
        """One row per case × iteration, the columns of ``details.csv`` (typed: scores as
        floats, successes as booleans, empty as None)."""
        import pandas as pd

        from evalrunner.reports.analysis.stats import (
            detail_cells,
            detail_header,
            has_conversations,
            has_perturbations,
        )

        data = self.report
        # the perturbed copies and conversation turns are rows of details.csv too
        rows = data.rows + data.perturbed_rows
        flags = (has_perturbations(rows), has_conversations(rows))
        cells = [detail_cells(row, data.metrics, *flags) for row in rows]
        return pd.DataFrame(cells, columns=detail_header(data.metrics, *flags))

    @cached_property
    def results(self) -> pd.DataFrame:
        """One row per metric (run-wide, ``Iteration`` = "all"), then per iteration: the
        columns of ``result.csv``."""
        import pandas as pd

        from evalrunner.reports.analysis.stats import RESULT_COLUMNS, ordered_stats, result_cells

        rows = [result_cells(s) for s in ordered_stats(self.report.stats)]
        return pd.DataFrame(rows, columns=list(RESULT_COLUMNS))

    def metric(self, name: str) -> float | None:
        """The run-wide average of one metric (None: nothing scored)."""
        for m in self.summary.metrics:
            if m.metric == name:
                return m.average
        known = ", ".join(m.metric for m in self.summary.metrics)
        raise KeyError(f"no metric {name!r} in this run; it has: {known}")

    def junit_xml(self) -> bytes:
        """The run as JUnit XML, as ``--junit-xml`` writes it."""
        from evalrunner.reports.writers.junit import junit_xml

        return junit_xml([(self.report, self.summary)])

    def markdown(self) -> str:
        """The run's Markdown CI summary, as ``--markdown`` writes it."""
        from evalrunner.reports.writers.markdown import markdown_summary

        return markdown_summary([self.summary])

    def _repr_html_(self) -> str:
        """The notebook view: verdict, metrics, gates, top problems, where the report is."""
        from evalrunner.reports.views.notebook import render_notebook

        return render_notebook(self.summary, self.report_path)

    def __repr__(self) -> str:
        s = self.summary
        verdict = s.verdict.headline
        return (
            f"EvalRun({s.target!r} on {s.suite!r}: {s.items} runs of {s.cases} cases, "
            f"{verdict}, report={str(self.report_path)!r})"
        )


__all__: list[str] = ["EvalRun"]
