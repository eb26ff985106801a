"""A run (or a comparison) as one archive to attach to a ticket: the run's self-contained
report.html (it opens with no server: its CSS and script are inline, its charts drawn as SVG)
and the JSON behind it (report.json, summary.json), plus the reviewer's labels when there
are any; a comparison's page with its CSS inlined, and both runs' JSON."""

from __future__ import annotations

import io
import zipfile

from evalrunner.viewer.labels import LABELS
from evalrunner.viewer.store import RunEntry, RunStore

README = """evalrunner run {run_id} of {target} on {suite}

index.html    the run's report: open it in any browser, no server needed
report.json   the report data every page is made from (evalrunner's ReportData)
summary.json  the run summary (the execution output)
{labels}"""


def export_run(store: RunStore, entry: RunEntry) -> bytes:
    """The ZIP archive's bytes. The report page is rendered again from report.json when the
    run's own report.html is not in the source (a run copied without it)."""
    source = store.source
    html_key = f"{entry.prefix}report.html"
    if source.exists(html_key):
        html = source.read(html_key)
    else:
        from evalrunner.reports.views.html import render_report

        html = render_report(store.report(entry.run_id).full()).encode("utf-8")
    labels_key = f"{entry.prefix}{LABELS}"
    has_labels = source.exists(labels_key)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("index.html", html)
        archive.writestr("report.json", source.read(f"{entry.prefix}report.json"))
        archive.writestr("summary.json", source.read(f"{entry.prefix}summary.json"))
        if has_labels:
            archive.writestr("labels.csv", source.read(labels_key))
        archive.writestr(
            "README.txt",
            README.format(
                run_id=entry.run_id,
                target=entry.target,
                suite=entry.suite,
                labels="labels.csv    the reviewer's labels (evalrunner calibrate --labels)\n"
                if has_labels
                else "",
            ),
        )
    return buffer.getvalue()


COMPARE_README = """evalrunner comparison of two runs

index.html        the comparison: open it in any browser, no server needed
baseline.json     the baseline run's report data (evalrunner's ReportData)
current.json      the compared run's report data
regression.json   the regression check (verdict, reasons, score deltas with intervals)
"""


def export_comparison(html: str, baseline: bytes, current: bytes, regression: str) -> bytes:
    """A comparison as one ZIP archive: its page (CSS inlined, no script) and the JSON."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("index.html", html)
        archive.writestr("baseline.json", baseline)
        archive.writestr("current.json", current)
        archive.writestr("regression.json", regression)
        archive.writestr("README.txt", COMPARE_README)
    return buffer.getvalue()
