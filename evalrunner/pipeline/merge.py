"""Aggregate's first reading of a run: each case's record merged with the Score step's
results, and folded into its report row as it is read, so Aggregate never holds every
record at once. A case without a record, or without scores, says why: no case is ever
silently missing."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from evalrunner.evaluators import Evaluator, MetricResult
from evalrunner.pipeline.conversations import applicable, flatten
from evalrunner.pipeline.scoring import not_scored
from evalrunner.reports.analysis.stats import case_rows
from evalrunner.reports.model import CaseRow
from evalrunner.run import CaseRecord, ManifestItem, StepFailure

NO_RECORD = (
    "no result was recorded: the case task failed before writing one "
    "(see the execution's history for the Lambda error)"
)


def merged_results(per_case: list[MetricResult], batched: list[MetricResult]) -> list[MetricResult]:
    """The case's results with the Score step's: a Score-step result of a metric the case
    already has (a similarity part recomputed with embeddings) takes its place; the others
    are added."""
    by_metric = {(r.evaluator, r.metric): r for r in batched}
    out = [by_metric.pop((r.evaluator, r.metric), r) for r in per_case]
    return out + list(by_metric.values())


def merge_record(
    item: ManifestItem,
    record: CaseRecord | None,
    batched: list[MetricResult],
    evaluators: list[Evaluator],
    score_failure: StepFailure | None,
) -> CaseRecord:
    """One item's record with its Score-step results; a missing record becomes a failed
    task and a case that was not scored says why, so no case is ever silently missing."""
    if record is None:
        record = CaseRecord.for_item(item, "task_failed", NO_RECORD)
    mine = applicable(item.case, evaluators)  # a conversation's row, or its turns'
    if record.status == "not_run":
        record.results = not_scored(mine, f"not scored: {record.error}")
    elif record.status == "target_error" and item.case.is_conversation and record.results:
        pass  # run_case said which turn ended the conversation
    elif record.status != "ok":
        reason = (
            "not scored: the target call failed"
            if record.status == "target_error"
            else "not scored: the case task failed"
        )
        record.results = not_scored(mine, reason)
    else:
        record.results = merged_results(record.results, batched)
        have = {r.evaluator for r in record.results}
        missing = [e for e in mine if e.name not in have]
        if missing:
            why = score_failure.text() if score_failure else "no score was produced"
            record.results += not_scored(missing, f"not scored: the Score step failed ({why})")
    return record


@dataclass
class FoldedRecords:
    """What Aggregate keeps of the run's records once each is read: its report row and a few
    counts, not the record. A parsed record takes some 15 KB, ten times its row, so holding
    every record made Aggregate's memory grow with the run well beyond the reports."""

    rows: list[CaseRow] = field(default_factory=list)
    answered: int = 0
    target_errors: int = 0
    task_failures: int = 0
    judge_usages: list[dict[str, Any]] = field(default_factory=list)
    #: The answered suite cases, kept only when an evaluator of the run has run-level
    #: figures (:meth:`Evaluator.summarize` needs every sample at once).
    summary_cases: list[tuple[ManifestItem, CaseRecord]] = field(default_factory=list)

    def count(self, record: CaseRecord) -> None:
        """Count a run item's record (a case, or a conversation's own record)."""
        if record.status == "ok":
            self.answered += 1
        elif record.status == "target_error":
            self.target_errors += 1
        else:
            self.task_failures += 1
        if record.judge_usage is not None:
            self.judge_usages.append(record.judge_usage)


#: One set of field names for every result that has them all (see :func:`compact_results`).
_EVERY_RESULT_FIELD: set[str] = set(MetricResult.model_fields)


def compact_results(results: list[MetricResult]) -> list[MetricResult]:
    """The same results, sharing one set of "fields set" among them.

    Pydantic keeps on each model the set of the fields it was given (a 728-byte set for a
    result's eight), half of what a report row costs in memory with nine results. A result
    read from a record was given every field, so one shared set says the same for all of
    them. The set is swapped on the result itself, as ``model_construct`` (pydantic's way to
    build a model from values already validated) would store it on a copy: making a copy of
    every result cost more CPU than the rest of the fold. Adding a name the set already
    holds is what an attribute assignment does to it, so sharing it changes nothing else."""
    for result in results:
        if result.model_fields_set == _EVERY_RESULT_FIELD:
            object.__setattr__(result, "__pydantic_fields_set__", _EVERY_RESULT_FIELD)
    return results


def fold_records(
    records: Iterable[tuple[ManifestItem, CaseRecord | None]],
    batched: dict[str, list[MetricResult]],
    evaluators: list[Evaluator],
    score_failure: StepFailure | None,
) -> FoldedRecords:
    """Merge each record as it is read (:func:`~evalrunner.pipeline.score.iter_records`) and
    keep only what the reports need of it."""
    summarizing = any(type(e).summarize is not Evaluator.summarize for e in evaluators)
    out = FoldedRecords()
    for run_item, run_record in records:
        # a conversation: its own row then one per turn (the counts are of run items)
        for item, loaded in zip(*flatten([run_item], [run_record]), strict=True):
            record = merge_record(
                item, loaded, batched.get(item.item_id, []), evaluators, score_failure
            )
            record.results = compact_results(record.results)
            out.rows.extend(case_rows([item], [record]))
            if item.case.turn is None:
                out.count(record)
            if (
                summarizing
                and item.case.perturbation is None
                and not item.case.is_conversation
                and record.status == "ok"
                and record.response is not None
            ):
                out.summary_cases.append((item, record))
    return out
