"""Finding the run to compare with: the previous run of the same target and suite, or a run
named by id. Runs are found through their summary.json (small) and compared through their
report.json (the full :class:`ReportData`), both under ``test-reports/<target>/``, and only
in complete sets (see :mod:`evalrunner.reports.writers.publish`)."""

from __future__ import annotations

from evalrunner.errors import StorageError
from evalrunner.reports.model import ReportData
from evalrunner.reports.writers.publish import complete_summaries, read_verified, run_order
from evalrunner.storage import REPORTS_PREFIX, RunStore


def find_baseline(
    store: RunStore,
    *,
    target: str,
    suite: str,
    run_id: str,
    started_at: str,
    baseline_run_id: str | None = None,
    rejected: list[str] | None = None,
) -> ReportData | None:
    """The baseline's report, or None when there is no earlier run to compare with.

    Only complete report sets count (manifest written, files as listed in it): a set whose
    Aggregate was interrupted is never compared with. A named baseline that cannot be found
    is an error (the user asked for it); a missing previous run is not (the first run of a
    suite has nothing to compare with). The prefix of every set that fails its manifest is
    added to ``rejected``, for the report to name.
    """
    # A stopped run's partial set covers only the cases that finished: never a baseline.
    sets = [
        s
        for s in complete_summaries(store, target, rejected)
        if s.summary.run_id != run_id and not s.summary.partial
    ]
    if baseline_run_id is not None:
        chosen = [s for s in sets if s.summary.run_id == baseline_run_id]
        if not chosen:
            raise StorageError(
                f"baseline run {baseline_run_id!r} has no complete report under "
                f"{REPORTS_PREFIX}{target}/; runs found: "
                f"{', '.join(sorted(s.summary.run_id for s in sets)) or 'none'}"
            )
    else:
        earlier = [
            s for s in sets if s.summary.suite == suite and s.summary.started_at <= started_at
        ]
        chosen = sorted(earlier, key=lambda s: run_order(s.summary), reverse=True)
    for found in chosen:  # the latest first; one whose report does not check is skipped
        data = read_verified(store, found.manifest, found.summary.reports.report)
        if data is not None:
            return ReportData.model_validate_json(data)
        if rejected is not None:
            rejected.append(found.summary.reports.manifest[: -len("manifest.json")])
    return None
