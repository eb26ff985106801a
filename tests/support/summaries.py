"""A valid run summary for tests that exercise a reader of one (notify, CloudWatch metrics,
the baseline lookup, the output fitting) without running Aggregate."""

from __future__ import annotations

from typing import Any

from evalrunner.reports.summary import RunReports, RunSummary

FILES = {
    "details": "details.csv",
    "details_xlsx": "details.xlsx",
    "result": "result.csv",
    "problems": "problems.json",
    "insights": "insights.json",
    "html": "report.html",
    "report": "report.json",
    "summary": "summary.json",
    "manifest": "manifest.json",
}


def report_keys(prefix: str) -> RunReports:
    """The keys of a report set under ``prefix`` (``test-reports/<target>/<stamp>-``)."""
    return RunReports.model_validate({name: prefix + file for name, file in FILES.items()})


def metric(name: str, **fields: Any) -> dict[str, Any]:
    """A run-wide metric line of a summary (primary, threshold 0.5, higher is better)."""
    return {
        "metric": name,
        "evaluator": name,
        "primary": True,
        "threshold": 0.5,
        "higher_is_better": True,
        **fields,
    }


def run_summary(**fields: Any) -> RunSummary:
    """A summary of a small finished run; ``fields`` replace any of its values (nested ones
    as dicts, validated like a summary.json)."""
    base: dict[str, Any] = {
        "run_id": "r1",
        "target": "prod-rag",
        "target_kind": "lambdaArn",
        "suite": "test-suites/hr.xlsx",
        "started_at": "2026-11-22T10:00:00+00:00",
        "finished_at": "2026-11-22T10:01:00+00:00",
        "iterations": 1,
        "cases": 2,
        "items": 2,
        "answered": 2,
        "target_errors": 0,
        "task_failures": 0,
        "metrics": [],
        "bucket": "bkt",
        "reports": report_keys("test-reports/prod-rag/261122-100000-").model_dump(),
    }
    return RunSummary.model_validate({**base, **fields})
