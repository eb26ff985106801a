"""Aggregate: merge every case record with the batched scores, compare with the baseline,
find problems and insights, write the reports, and return the run's
:class:`~evalrunner.reports.summary.RunSummary` (the handler returns it, fitted to Step
Functions' output limit, as the execution's output).

It runs even when the Map or the Score step failed (the state machine catches both): cases
without a record are reported as failed tasks, so no case is ever silently missing.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from evalrunner.errors import EvalRunnerError
from evalrunner.estimate.model import ActualFigures
from evalrunner.estimate.prices import load_prices
from evalrunner.evaluators import Evaluator, MetricResult, resolve
from evalrunner.pipeline.baseline import find_baseline
from evalrunner.pipeline.context import RunContext
from evalrunner.pipeline.conversations import applicable, flatten
from evalrunner.pipeline.run_case import not_scored, sample_of
from evalrunner.pipeline.score import iter_records, load_manifest
from evalrunner.redaction import mask_config
from evalrunner.reports.categories import category_stats
from evalrunner.reports.csv_writer import to_csv
from evalrunner.reports.html import render_report
from evalrunner.reports.insights import find_insights
from evalrunner.reports.model import CaseRow, Gate, MetricStats, Problem, ReportData
from evalrunner.reports.problems import find_problems, problem_order
from evalrunner.reports.publish import SetWriter, manifest_key
from evalrunner.reports.regression import compare
from evalrunner.reports.robustness import analyse as analyse_robustness
from evalrunner.reports.stats import (
    case_rows,
    compute_stats,
    detail_lines,
    metric_infos,
    result_table,
)
from evalrunner.reports.summary import (
    JudgeTotals,
    MetricSummary,
    RegressionVerdict,
    RobustnessSummary,
    RunReports,
    RunSummary,
    SummaryProblem,
)
from evalrunner.reports.verdict import decide
from evalrunner.reports.weakness import (
    find_weak_spots,
    question_embedder,
    weak_spots_enabled,
    weakness_problems,
)
from evalrunner.reports.xlsx import details_xlsx
from evalrunner.run import CaseRecord, ManifestItem, ModelNotice, RunConfig, ScoresFile
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS
from evalrunner.storage import RunStore

NO_RECORD = (
    "no result was recorded: the case task failed before writing one "
    "(see the execution's history for the Lambda error)"
)


#: The Map failures with which an engine hands a stopped run to Aggregate: a stall, or a stop
#: asked for (SIGTERM, Ctrl-C). The reports of such a run are partial (summary ``partial``).
STOPPED_ERRORS = ("Engine.Stalled", "Engine.Stopped")


def stopped_reason(map_failure: Any) -> str | None:
    """Why the run was stopped part-way, or None when it was not (a Map failure of any
    other kind is a step failure of a run that went to its end)."""
    if isinstance(map_failure, dict) and map_failure.get("Error") in STOPPED_ERRORS:
        return str(map_failure.get("Cause") or map_failure["Error"])
    return None


def baseline_ignored(prefixes: list[str]) -> list[Problem]:
    """A problem naming each report set that was skipped because it fails its manifest: a
    baseline that silently vanished would let a regression through unseen."""
    return [
        Problem(
            severity="high",
            type="baseline_ignored",
            description=f"baseline {prefix} ignored: its manifest does not match (a file of "
            "the set was changed, removed or damaged after the set was written)",
            suggested_action="restore the set's files as they were written, or delete the "
            "set; name a run to compare with in 'baseline' (--baseline) meanwhile",
        )
        for prefix in dict.fromkeys(prefixes)
    ]


def baseline_note(
    compared: bool, ignored: list[Problem], missing: Problem | None, named: str | None
) -> str | None:
    """What the report says when the run was compared with no baseline (None when it was):
    a regression gate (``--fail-on-regression``) had nothing to check."""
    if compared:
        return None
    if missing is not None:
        why = missing.description
    elif ignored:
        why = f"{len(ignored)} earlier set(s) failed their manifest check (see Problems)"
    else:
        why = "no earlier complete run of this target on this suite"
    what = f"baseline {named!r}" if named else "an earlier run"
    return (
        f"Not compared with {what}: no verifiable baseline ({why}). A regression gate "
        "(--fail-on-regression) had nothing to check."
    )


def _failure_text(failure: Any) -> str | None:
    if not failure:
        return None
    if isinstance(failure, dict):
        error, cause = failure.get("Error", "error"), failure.get("Cause", "")
        return f"{error}: {cause}" if cause else str(error)
    return str(failure)


def evaluate_gates(config: RunConfig, stats: list[MetricStats]) -> list[Gate]:
    """A gate names a metric, or an evaluator meaning its primary metric."""
    run_wide = [s for s in stats if s.iteration is None]
    gates = []
    for name, minimum in config.fail_under.items():
        # metric name first; an evaluator's name means its primary metric. (Two generators
        # joined by ``or`` never reach the second one: a generator is always truthy.)
        match = next((s for s in run_wide if s.metric == name), None) or next(
            (s for s in run_wide if s.evaluator == name and s.primary), None
        )
        average = match.average if match else None
        if match is not None and not match.higher_is_better:
            passed = average is not None and average <= minimum
        else:
            passed = average is not None and average >= minimum
        gates.append(
            Gate(
                metric=match.metric if match else name,
                gate=name,
                threshold=minimum,
                average=average,
                passed=passed,
                higher_is_better=match.higher_is_better if match else True,
            )
        )
    return gates


def summarize(
    evaluators: list[Evaluator],
    items: list[ManifestItem],
    records: list[CaseRecord],
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
) -> dict[str, Any]:
    """Run-level figures of the evaluators that have them, over the answered cases."""
    answered = [
        (item, record)
        for item, record in zip(items, records, strict=True)
        if record.status == "ok" and record.response is not None
    ]
    samples = [sample_of(i.case, r.response, max_text_chars) for i, r in answered]
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
    score_failure: Any,
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
            why = _failure_text(score_failure) or "no score was produced"
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
    score_failure: Any,
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


def aggregate_run(
    context: RunContext,
    *,
    map_failure: Any = None,
    score_failure: Any = None,
    now: datetime | None = None,
) -> RunSummary:
    """Merge, aggregate, compare, write the report set (the manifest last) and return the
    summary; ``summary.json`` holds the same."""
    # The collector is the caller's to tune: the CLI and the deployed handler run this with the
    # older objects frozen (evalrunner/gc_freeze.py); a notebook or a test run is left alone.
    return _aggregate(context, map_failure=map_failure, score_failure=score_failure, now=now)


def _aggregate(
    context: RunContext, *, map_failure: Any, score_failure: Any, now: datetime | None
) -> RunSummary:
    store, config, run_id = context.store, context.config, context.run_id
    # Built without services: Aggregate only reads their metrics and run-level summaries.
    evaluators: list[Evaluator] = [
        resolve(n)(config.thresholds, config.evaluator_options.get(n)) for n in config.metrics
    ]
    items = load_manifest(store, run_id)
    item_count = len(items)
    scored = load_scores(store, run_id)
    # Records are read a chunk at a time and folded into their rows: memory grows with the
    # reports, not with every record held at once.
    folded = fold_records(
        iter_records(store, run_id, items), scored.items, evaluators, score_failure
    )
    del items  # the manifest's cases live on in the rows

    every_row = folded.rows
    # Statistics, gates, problems and the baseline comparison are over the suite's own
    # cases; perturbed copies and variants feed the robustness analysis (and details.csv).
    rows = [r for r in every_row if r.perturbation is None]
    perturbed_rows = [r for r in every_row if r.perturbation is not None]
    infos = metric_infos(evaluators)
    by_evaluator = scored.models.by_evaluator if scored.models else {}
    for info in infos:
        info.model = by_evaluator.get(info.evaluator)
    stats = compute_stats(rows, infos, config.iterations)
    finished = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    data = ReportData(
        run_id=run_id,
        target=config.target_name,
        target_kind=config.target_kind,
        suite=config.suite_key,
        report_prefix=config.report_prefix,
        started_at=config.started_at,
        finished_at=finished,
        iterations=config.iterations,
        config={
            **mask_config(
                config.model_dump(
                    mode="json",
                    include={
                        "target",
                        "metrics",
                        "thresholds",
                        "fail_under",
                        "evaluator_options",
                        "iterations",
                        "suite_key",
                        "baseline",
                        # shown only when given: reports of other runs stay as they were
                        *(("perturbations",) if config.perturbations else ()),
                    },
                )
            ),
            # whether judge metrics could run (the judge's own settings stay out)
            "judge_configured": config.judge is not None,
        },
        metrics=infos,
        stats=stats,
        rows=rows,
        perturbed_rows=perturbed_rows,
        gates=evaluate_gates(config, stats),
        run_metrics=summarize(
            evaluators,
            [i for i, _ in folded.summary_cases],
            [r for _, r in folded.summary_cases],
            config.max_text_chars,
        ),
        categories=category_stats(rows, infos),
        partial=stopped_reason(map_failure) is not None,
        stopped_reason=stopped_reason(map_failure),
    )
    data.robustness = analyse_robustness(data)
    baseline_problem = None
    rejected: list[str] = []
    try:
        baseline = find_baseline(
            store,
            target=config.target_name,
            suite=config.suite_key,
            run_id=run_id,
            started_at=config.started_at,
            baseline_run_id=config.baseline,
            rejected=rejected,
        )
    except EvalRunnerError as exc:  # a named baseline is missing: say so, keep the reports
        baseline = None
        baseline_problem = Problem(
            severity="medium",
            type="baseline_missing",
            description=exc.message,
            suggested_action="name a run id that exists, or leave 'baseline' out to compare "
            "with the previous run",
        )
    if baseline is not None:
        data.regression = compare(data, baseline)
    ignored = baseline_ignored(rejected)
    data.baseline_note = baseline_note(
        baseline is not None, ignored, baseline_problem, config.baseline
    )
    problems = find_problems(data)
    if weak_spots_enabled():
        used = list(scored.models.models) if scored.models else []
        data.weak_spots, data.weak_spots_method = find_weak_spots(data, *question_embedder(used))
        problems = sorted(problems + weakness_problems(data.weak_spots), key=problem_order)
    lead = sum(1 for p in problems if p.type == "regression")  # a regression stays first
    problems[lead:lead] = model_problems(scored.notices) + score_step_problems(score_failure)
    data.problems = problems + ignored + ([baseline_problem] if baseline_problem else [])
    data.insights = find_insights(data)
    # the run's one verdict: report.html, summary.json and every later reader take this one
    data.verdict = decide(
        items=item_count,
        answered=folded.answered,
        stats=data.run_stats(),
        gates=data.gates,
        regressed=data.regression is not None and data.regression.verdict == "regression",
        regression_reasons=data.regression.reasons if data.regression else (),
        baseline_run_id=data.regression.baseline_run_id if data.regression else None,
        partial=data.partial,
        stopped_reason=data.stopped_reason,
        policy=config.policy,
    )

    prefix = config.report_prefix
    keys = {
        name: f"{prefix}{name.replace('_', '.')}"
        for name in (
            "details_csv",
            "details_xlsx",
            "result_csv",
            "problems_json",
            "insights_json",
            "report_html",
            "report_json",
            "summary_json",
        )
    }
    # every file, then the manifest last: until it exists no reader takes the set as complete
    writer = SetWriter(store, run_id, prefix)
    writer.put(keys["details_csv"], to_csv(*detail_lines(every_row, infos)), "text/csv")
    writer.put(
        keys["details_xlsx"],
        details_xlsx(every_row, infos, stats=stats),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    writer.put(keys["result_csv"], to_csv(*result_table(stats, data.categories)), "text/csv")
    writer.put_json(keys["problems_json"], [p.model_dump(mode="json") for p in data.problems])
    writer.put_json(keys["insights_json"], [i.model_dump(mode="json") for i in data.insights])
    writer.put(keys["report_html"], render_report(data).encode("utf-8"), "text/html")
    # model_dump_json's bytes before they are decoded to text: one copy of the biggest file less
    report_json = ReportData.__pydantic_serializer__.to_json(data)
    writer.put(keys["report_json"], report_json, "application/json")
    del report_json

    failures = [f for f in (_failure_text(map_failure), _failure_text(score_failure)) if f]
    reports = RunReports(
        details=keys["details_csv"],
        details_xlsx=keys["details_xlsx"],
        result=keys["result_csv"],
        problems=keys["problems_json"],
        insights=keys["insights_json"],
        html=keys["report_html"],
        report=keys["report_json"],
        summary=keys["summary_json"],
        manifest=manifest_key(prefix),
    )
    regression = data.regression
    judge_totals = _judge_totals(folded.judge_usages)
    summary = RunSummary(
        run_id=run_id,
        target=config.target_name,
        target_kind=config.target_kind,
        suite=config.suite_key,
        started_at=config.started_at,
        finished_at=finished,
        iterations=config.iterations,
        cases=config.case_count,
        items=item_count,
        answered=folded.answered,
        target_errors=folded.target_errors,
        task_failures=folded.task_failures,
        step_failures=failures,
        partial=data.partial,
        stopped_reason=data.stopped_reason,
        metrics=[MetricSummary.model_validate(s.model_dump()) for s in data.run_stats()],
        run_metrics=data.run_metrics,
        categories=data.categories,
        gates=data.gates,
        gates_passed=all(g.passed for g in data.gates),
        regression=RegressionVerdict.of(regression) if regression is not None else None,
        judge=judge_totals,
        models=scored.models,
        problems=[SummaryProblem.of(p) for p in data.problems],
        robustness=[RobustnessSummary.of(p) for p in data.robustness],
        estimate=config.estimate,
        actual=actual_figures(config, item_count, judge_totals),
        bucket=store.bucket,
        reports=reports,
        verdict=data.verdict,
    )
    writer.put_json(keys["summary_json"], summary.model_dump(mode="json"))
    writer.publish()
    _refresh_history(store, config.target_name)
    return summary


def _refresh_history(store: RunStore, target: str) -> None:
    """The target's trend page, now including this run. A failure here costs the page, not
    the run: its reports are published already, and the next run rebuilds the page."""
    from evalrunner.reports.history import refresh_history

    try:
        refresh_history(store, target)
    except Exception:
        logging.getLogger(__name__).exception("history of %s not refreshed", target)


def load_scores(store: RunStore, run_id: str) -> ScoresFile:
    """The Score step's scores file; empty when the step left none (it failed, or timed
    out: Aggregate then reports the model metrics as not scored)."""
    raw = store.get_json_or_none(store.scores_key(run_id))
    return ScoresFile.model_validate(raw) if raw else ScoresFile()


#: What a Batch job that never started says (JobStateTimeLimitActions' reasons, the RUNNABLE
#: state), or the state machine's own timeout of ScoreOnBatch.
_JOB_NEVER_RAN = re.compile(
    r"States\.Timeout|RUNNABLE|CAPACITY:|MISCONFIGURATION:|INSUFFICIENT_INSTANCE_CAPACITY"
)


def score_step_problems(score_failure: Any) -> list[Problem]:
    """One high problem when the Score step failed (the GPU Batch job or the Score Lambda):
    the model metrics were not scored, why, and how to fix it. A job that never ran is
    nearly always a GPU quota of 0 (new accounts) or no capacity for its instance types."""
    why = _failure_text(score_failure)
    if why is None:
        return []
    if _JOB_NEVER_RAN.search(why):
        description = (
            "Model metrics were not scored: the GPU scoring job on AWS Batch did not run "
            f"(it waited RUNNABLE until its time limit, or the step timed out): {why}"
        )
        action = (
            "request a quota for GPU instances: Service Quotas, Amazon EC2, 'Running "
            "On-Demand G and VT instances' (vCPUs; 'All G and VT Spot Instance Requests' "
            "with batch_scoring.spot) of at least the job's vCPUs, in the stack's region; or "
            'set "scoring": "cpu" in the event to score in the Score Lambda (no GPU); or '
            "deploy with batch_scoring.enabled false"
        )
    else:
        description = f"Model metrics were not scored: the Score step failed: {why}"
        action = (
            "read the Score step's log (the GPU job's log group, or the Score function's) for "
            'the error; "scoring": "cpu" in the event scores in the Score Lambda instead of '
            "the GPU job"
        )
    return [
        Problem(
            severity="high",
            type="scoring_failed",
            description=description,
            suggested_action=action,
        )
    ]


def model_problems(notices: list[ModelNotice]) -> list[Problem]:
    """One high problem per model that was not there: the evaluators it skipped, and how
    to provide it. It comes first: a metric the user asked for was not measured at all."""
    return [
        Problem(
            severity="high",
            type="model_unavailable",
            description=(
                # one model can serve several roles (MiniLM: embeddings and BERTScore)
                f"{', '.join(n.evaluators)} skipped: model {n.model!r} is not available"
            ),
            suggested_action=n.how,
        )
        for n in notices
    ]


def actual_figures(
    config: RunConfig, items: int, judge: JudgeTotals | None
) -> ActualFigures | None:
    """What the run measured, in the terms of its estimate (None for a run without one)."""
    if config.estimate is None:
        return None
    calls = judge.calls if judge else 0
    tokens_in = judge.input_tokens if judge else 0
    tokens_out = judge.output_tokens if judge else 0
    model = config.estimate.judge.model if config.estimate.judge else None
    prices = load_prices().judge_prices(model)
    cost = (
        round(
            tokens_in / 1e6 * prices.per_million_input
            + tokens_out / 1e6 * prices.per_million_output,
            4,
        )
        if prices
        else None
    )
    return ActualFigures(
        items=items,
        judge_calls=calls,
        judge_cached=judge.cached if judge else 0,
        judge_input_tokens=tokens_in,
        judge_output_tokens=tokens_out,
        judge_cost=cost,
    )


def _judge_totals(usages: list[dict[str, Any]]) -> JudgeTotals | None:
    """Judge calls and tokens of the run (each case's ``judge_usage``), and per answered
    case: what the judge cost."""
    if not usages:
        return None
    keys = ("calls", "cached", "input_tokens", "output_tokens", "retries", "parse_failures")
    totals: dict[str, Any] = {k: sum(int(u.get(k, 0)) for u in usages) for k in keys}
    totals["cases"] = len(usages)
    totals["calls_per_case"] = totals["calls"] / len(usages)
    totals["tokens_per_case"] = (totals["input_tokens"] + totals["output_tokens"]) / len(usages)
    return JudgeTotals.model_validate(totals)
