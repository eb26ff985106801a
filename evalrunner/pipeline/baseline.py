"""Finding the run to compare with: the previous run of the same target and suite, or a run
named by id. Runs are found through their summary.json (small) and compared through their
report.json (the full :class:`ReportData`), both under ``test-reports/<target>/``."""

from __future__ import annotations

from typing import Any

from evalrunner.errors import StorageError
from evalrunner.reports.model import ReportData
from evalrunner.storage import REPORTS_PREFIX, RunStore

SUMMARY_SUFFIX = "summary.json"
REPORT_SUFFIX = "report.json"


def _summaries(store: RunStore, target: str) -> list[dict[str, Any]]:
    keys = [k for k in store.list_keys(f"{REPORTS_PREFIX}{target}/") if k.endswith(SUMMARY_SUFFIX)]
    out = []
    for key in keys:
        summary = store.get_json_or_none(key)
        if isinstance(summary, dict) and "run_id" in summary and "reports" in summary:
            out.append(summary)
    return out


def find_baseline(
    store: RunStore,
    *,
    target: str,
    suite: str,
    run_id: str,
    started_at: str,
    baseline_run_id: str | None = None,
) -> ReportData | None:
    """The baseline's report, or None when there is no earlier run to compare with.

    A named baseline that cannot be found is an error (the user asked for it); a missing
    previous run is not (the first run of a suite has nothing to compare with).
    """
    summaries = [s for s in _summaries(store, target) if s["run_id"] != run_id]
    if baseline_run_id is not None:
        chosen = next((s for s in summaries if s["run_id"] == baseline_run_id), None)
        if chosen is None:
            raise StorageError(
                f"baseline run {baseline_run_id!r} has no report under "
                f"{REPORTS_PREFIX}{target}/; runs found: "
                f"{', '.join(sorted(s['run_id'] for s in summaries)) or 'none'}"
            )
    else:
        earlier = [
            s
            for s in summaries
            if s.get("suite") == suite and s.get("started_at", "") <= started_at
        ]
        if not earlier:
            return None
        chosen = max(earlier, key=lambda s: (s.get("started_at", ""), s["run_id"]))
    key = chosen["reports"].get("report")
    if not key:
        return None  # a run from before report.json existed
    return ReportData.model_validate(store.get_json(key))
