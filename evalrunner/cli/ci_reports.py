"""``--junit-xml FILE`` and ``--markdown FILE``: a finished run's verdict where CI reads it.
The Markdown summary is also appended to ``$GITHUB_STEP_SUMMARY`` when that is set (GitHub
Actions shows it on the run's page), with or without ``--markdown``."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalrunner.errors import ConfigError

if TYPE_CHECKING:
    from evalrunner.engine.run_types import RunResult

#: GitHub Actions' per-step summary file.
STEP_SUMMARY_ENV = "GITHUB_STEP_SUMMARY"

JunitOption = Annotated[
    Path | None,
    typer.Option(
        "--junit-xml",
        help="Write JUnit XML here: one testcase per case × primary (or gated) metric, one per "
        "--fail-under gate; failures carry the reason.",
    ),
]
MarkdownOption = Annotated[
    Path | None,
    typer.Option(
        "--markdown",
        help="Write a Markdown summary here (verdict, gates, regression, primary metrics, top "
        "problems); also appended to $GITHUB_STEP_SUMMARY when that is set.",
    ),
]


def check_ci_paths(*paths: Path | None) -> None:
    """Refuse a report path that cannot be written before the run starts."""
    for path in paths:
        if path is None:
            continue
        if path.is_dir():
            raise ConfigError(f"{path} is a folder; give a file name, e.g. reports/junit.xml")
        parent = path.parent
        while not parent.exists() and parent.parent != parent:
            parent = parent.parent
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            raise ConfigError(f"{path}: {parent} is not a folder this user can write to")


def write_ci_reports(
    results: Sequence[RunResult], *, junit: Path | None, markdown: Path | None
) -> list[Path]:
    """Write the requested CI files for ``results``; returns what was written."""
    from evalrunner.reports.model import ReportData
    from evalrunner.reports.writers.junit import write_junit
    from evalrunner.reports.writers.markdown import markdown_summary

    written: list[Path] = []
    if junit is not None:
        runs = [
            (
                ReportData.model_validate_json((r.out_dir / r.summary.reports.report).read_bytes()),
                r.summary,
            )
            for r in results
        ]
        written.append(write_junit(junit, runs))
    step_summary = os.environ.get(STEP_SUMMARY_ENV)
    if markdown is None and not step_summary:
        return written
    text = markdown_summary([r.summary for r in results])
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(text, encoding="utf-8")
        written.append(markdown)
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")
        written.append(Path(step_summary))
    return written


__all__ = ["JunitOption", "MarkdownOption", "check_ci_paths", "write_ci_reports"]
