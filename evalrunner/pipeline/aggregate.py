"""Aggregate: merge every case record with the batched scores, write the reports, and return
the summary that becomes the execution's output.

It runs even when the Map or the Score step failed (the state machine catches both): cases
without a record are reported as failed tasks, so no case is ever silently missing.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evalrunner.evaluators import Evaluator, MetricResult, resolve
from evalrunner.pipeline.run_case import load_config, not_scored, sample_of
from evalrunner.pipeline.score import load_manifest, load_records
from evalrunner.reports.csv_writer import to_csv
from evalrunner.reports.tables import (
    MetricStats,
    detail_rows,
    metric_columns,
    metric_stats,
    result_rows,
)
from evalrunner.run import CaseRecord, ManifestItem, RunConfig
from evalrunner.storage import RunStore

NO_RECORD = (
    "no result was recorded: the case task failed before writing one "
    "(see the execution's history for the Lambda error)"
)


def _failure_text(failure: Any) -> str | None:
    if not failure:
        return None
    if isinstance(failure, dict):
        error, cause = failure.get("Error", "error"), failure.get("Cause", "")
        return f"{error}: {cause}" if cause else str(error)
    return str(failure)


def summarize(
    evaluators: list[Evaluator], items: list[ManifestItem], records: list[CaseRecord]
) -> dict[str, Any]:
    """Run-level figures of the evaluators that have them, over the answered cases."""
    answered = [
        (item, record)
        for item, record in zip(items, records, strict=True)
        if record.status == "ok" and record.response is not None
    ]
    samples = [sample_of(item.case, record.response) for item, record in answered]
    out: dict[str, Any] = {}
    for evaluator in evaluators:
        results = [[r for r in rec.results if r.evaluator == evaluator.name] for _, rec in answered]
        try:
            summary = evaluator.summarize(samples, results)
        except Exception as exc:  # a summary bug must not cost the reports
            summary = {"error": f"{type(exc).__name__}: {exc}"}
        if summary is not None:
            out[evaluator.name] = summary
    return out


def evaluate_gates(config: RunConfig, stats: list[MetricStats]) -> list[dict[str, Any]]:
    """A gate names a metric, or an evaluator meaning its primary metric."""
    gates = []
    for name, minimum in config.fail_under.items():
        match = next(
            (s for s in stats if s.column.metric == name)
            or (s for s in stats if s.column.evaluator == name and s.column.primary),
            None,
        )
        average = match.average if match else None
        if match is not None and not match.column.higher_is_better:
            passed = average is not None and average <= minimum
        else:
            passed = average is not None and average >= minimum
        gates.append(
            {
                "metric": match.column.metric if match else name,
                "gate": name,
                "threshold": minimum,
                "average": average,
                "passed": passed,
            }
        )
    return gates


def aggregate_run(
    store: RunStore,
    run_id: str,
    *,
    map_failure: Any = None,
    score_failure: Any = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    config = load_config(store, run_id)
    evaluators: list[Evaluator] = [
        resolve(n)(config.thresholds, config.evaluator_options.get(n)) for n in config.metrics
    ]
    items = load_manifest(store, run_id)
    loaded = load_records(store, run_id, items)
    batched: dict[str, list[dict[str, Any]]] = (
        store.get_json_or_none(store.scores_key(run_id)) or {}
    )

    records: list[CaseRecord] = []
    for item, record in zip(items, loaded, strict=True):
        if record is None:
            record = CaseRecord.for_item(item, "task_failed", NO_RECORD)
        if record.status != "ok":
            reason = (
                "not scored: the target call failed"
                if record.status == "target_error"
                else "not scored: the case task failed"
            )
            record.results = not_scored(evaluators, reason)
        else:
            record.results += [
                MetricResult.model_validate(r) for r in batched.get(item.item_id, [])
            ]
            have = {r.evaluator for r in record.results}
            missing = [e for e in evaluators if e.name not in have]
            if missing:
                why = _failure_text(score_failure) or "no score was produced"
                record.results += not_scored(missing, f"not scored: the Score step failed ({why})")
        records.append(record)

    run_metrics = summarize(evaluators, items, records)
    columns = metric_columns(evaluators)
    stats = metric_stats(records, columns)
    gates = evaluate_gates(config, stats)
    prefix = config.report_prefix
    keys = {
        "details": f"{prefix}details.csv",
        "result": f"{prefix}result.csv",
        "summary": f"{prefix}summary.json",
    }
    store.put_bytes(keys["details"], to_csv(*detail_rows(items, records, columns)), "text/csv")
    store.put_bytes(keys["result"], to_csv(*result_rows(stats)), "text/csv")

    finished = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    failures = [f for f in (_failure_text(map_failure), _failure_text(score_failure)) if f]
    summary = {
        "run_id": run_id,
        "target": config.target_name,
        "target_kind": config.target_kind,
        "suite": config.suite_key,
        "started_at": config.started_at,
        "finished_at": finished,
        "iterations": config.iterations,
        "cases": config.case_count,
        "items": len(items),
        "target_errors": sum(1 for r in records if r.status == "target_error"),
        "task_failures": sum(1 for r in records if r.status == "task_failed"),
        "step_failures": failures,
        "metrics": [s.as_json() for s in stats],
        "run_metrics": run_metrics,
        "gates": gates,
        "gates_passed": all(g["passed"] for g in gates),
        "bucket": store.bucket,
        "reports": keys,
    }
    store.put_json(keys["summary"], summary)
    return summary
