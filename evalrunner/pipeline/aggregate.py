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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import JsonValue

from evalrunner.errors import EvalRunnerError
from evalrunner.estimate.model import ActualFigures
from evalrunner.estimate.prices import load_prices
from evalrunner.evaluators import Evaluator, resolve
from evalrunner.pipeline.baseline import find_baseline
from evalrunner.pipeline.context import RunContext, Settings
from evalrunner.pipeline.merge import FoldedRecords, fold_records
from evalrunner.pipeline.model_notices import model_problems
from evalrunner.pipeline.score import iter_records, load_manifest
from evalrunner.pipeline.scoring import sample_of
from evalrunner.redaction import mask_config
from evalrunner.reports.analysis.categories import category_stats
from evalrunner.reports.analysis.insights import find_insights
from evalrunner.reports.analysis.problems import find_problems, problem_order
from evalrunner.reports.analysis.regression import compare
from evalrunner.reports.analysis.robustness import analyse as analyse_robustness
from evalrunner.reports.analysis.stats import (
    compute_stats,
    detail_lines,
    metric_infos,
    result_table,
)
from evalrunner.reports.analysis.weakness import (
    find_weak_spots,
    question_embedder,
    weak_spots_enabled,
    weakness_problems,
)
from evalrunner.reports.model import (
    CaseRow,
    Gate,
    MetricStats,
    Problem,
    Regression,
    ReportData,
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
from evalrunner.reports.views.html import render_report
from evalrunner.reports.writers.csv_writer import to_csv
from evalrunner.reports.writers.publish import SetWriter, manifest_key
from evalrunner.reports.writers.xlsx import details_xlsx
from evalrunner.run import (
    AggregateState,
    CaseRecord,
    ManifestItem,
    RunConfig,
    ScoresFile,
    StepFailure,
)
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS
from evalrunner.storage import RunStore

#: The Map failures with which an engine hands a stopped run to Aggregate: a stall, or a stop
#: asked for (SIGTERM, Ctrl-C). The reports of such a run are partial (summary ``partial``).
STOPPED_ERRORS = ("Engine.Stalled", "Engine.Stopped")


def stopped_reason(map_failure: StepFailure | None) -> str | None:
    """Why the run was stopped part-way, or None when it was not (a Map failure of any
    other kind is a step failure of a run that went to its end)."""
    if map_failure is not None and map_failure.error in STOPPED_ERRORS:
        return map_failure.cause or map_failure.error
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


def no_baseline_why(ignored: list[Problem], missing: Problem | None) -> str:
    """Why a run was compared with no baseline, in words (the report's note and the
    verdict's note under ``--fail-on-regression`` say the same)."""
    if missing is not None:
        return missing.description
    if ignored:
        return f"{len(ignored)} earlier set(s) failed their manifest check (see Problems)"
    return "no earlier complete run of this target on this suite"


def baseline_note(
    compared: bool, ignored: list[Problem], missing: Problem | None, named: str | None
) -> str | None:
    """What the report says when the run was compared with no baseline (None when it was):
    a regression gate (``--fail-on-regression``) had nothing to check."""
    if compared:
        return None
    why = no_baseline_why(ignored, missing)
    what = f"baseline {named!r}" if named else "an earlier run"
    return (
        f"Not compared with {what}: no verifiable baseline ({why}). A regression gate "
        "(--fail-on-regression) had nothing to check."
    )


def _failure_text(failure: StepFailure | None) -> str | None:
    return failure.text() if failure is not None else None


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
) -> dict[str, JsonValue]:
    """Run-level figures of the evaluators that have them, over the answered cases."""
    answered = [
        (item, record)
        for item, record in zip(items, records, strict=True)
        if record.status == "ok" and record.response is not None
    ]
    samples = [sample_of(i.case, r.response, max_text_chars) for i, r in answered]
    out: dict[str, JsonValue] = {}
    for evaluator in evaluators:
        results = [[r for r in rec.results if r.evaluator == evaluator.name] for _, rec in answered]
        try:
            summary = evaluator.summarize(samples, results)
        except Exception as exc:  # a summary bug must not cost the reports
            summary = {"error": f"{type(exc).__name__}: {exc}"}
        if summary is not None:
            out[evaluator.name] = summary
    return out


def aggregate_run(
    context: RunContext, state: AggregateState | None = None, *, now: datetime | None = None
) -> RunSummary:
    """Aggregate in three steps: build the report data (immutable once built), summarise it,
    and write the report set (``summary.json`` among it, the manifest last); the summary is
    the execution's output. ``state``: the state machine's state, with the Map's and the
    Score step's failures (None: a run whose steps all succeeded)."""
    # The collector is the caller's to tune: the CLI and the deployed handler run this with the
    # older objects frozen (evalrunner/gc_freeze.py); a notebook or a test run is left alone.
    return _aggregate(context, state, now=now)


def _aggregate(
    context: RunContext, state: AggregateState | None, *, now: datetime | None
) -> RunSummary:
    state = state or AggregateState(run_id=context.run_id)
    built = build_report(context, state, now=now)
    summary = summarise(built, state, context.store.bucket)
    write_report_set(context.store, built, summary)
    _refresh_history(context.store, built.config.target_name)
    return summary


@dataclass(frozen=True)
class BuiltReport:
    """What Aggregate built of a run: the report data, and the figures the summary and the
    report set need besides it."""

    config: RunConfig
    data: ReportData
    #: Every row, perturbed ones included, in manifest order (details.csv and .xlsx).
    every_row: list[CaseRow]
    folded: FoldedRecords
    item_count: int
    scored: ScoresFile


def build_report(
    context: RunContext, state: AggregateState, *, now: datetime | None = None
) -> BuiltReport:
    """Step 1: read the run, measure it, then analyse it (robustness, the baseline, problems,
    insights, the verdict). Each analysis reads the data as built so far and the next data
    is a copy with its result: nothing is changed once made."""
    store, config, run_id = context.store, context.config, context.run_id
    # Built without services: Aggregate only reads their metrics and run-level summaries.
    evaluators: list[Evaluator] = [
        resolve(n)(config.thresholds, config.evaluator_options.get(n)) for n in config.metrics
    ]
    items = load_manifest(store, run_id)
    item_count = len(items)
    scored = load_scores(store, run_id)
    # Records are read a chunk at a time and folded into their rows: memory grows with the
    # reports, not with every record held at once. The manifest's cases live on in the rows.
    folded = fold_records(
        iter_records(store, run_id, items), scored.items, evaluators, state.score_failure
    )
    del items
    finished = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    data = measured_data(context, evaluators, folded, scored, state.map_failure, finished)
    data = data.model_copy(update={"robustness": analyse_robustness(data)})
    regression, note, baseline_problems = compare_with_baseline(context, data)
    ignored = [p for p in baseline_problems if p.type == "baseline_ignored"]
    missing = next((p for p in baseline_problems if p.type == "baseline_missing"), None)
    data = data.model_copy(update={"regression": regression, "baseline_note": note})
    data = with_problems(data, scored, state.score_failure, baseline_problems, context.settings)
    data = data.model_copy(update={"insights": find_insights(data)})
    # the run's one verdict: report.html, summary.json and every later reader take this one
    verdict = decide(
        items=item_count,
        answered=folded.answered,
        stats=data.run_stats(),
        gates=data.gates,
        regressed=regression is not None and regression.verdict == "regression",
        regression_reasons=regression.reasons if regression else (),
        baseline_run_id=regression.baseline_run_id if regression else None,
        partial=data.partial,
        stopped_reason=data.stopped_reason,
        no_baseline=None if note is None else no_baseline_why(ignored, missing),
        policy=config.policy,
    )
    data = data.model_copy(update={"verdict": verdict})
    return BuiltReport(config, data, folded.rows, folded, item_count, scored)


def measured_data(
    context: RunContext,
    evaluators: list[Evaluator],
    folded: FoldedRecords,
    scored: ScoresFile,
    map_failure: StepFailure | None,
    finished: str,
) -> ReportData:
    """The run's figures before any analysis: rows, statistics, gates, run-level figures and
    categories. They are over the suite's own cases; perturbed copies and variants feed the
    robustness analysis (and details.csv)."""
    config = context.config
    rows = [r for r in folded.rows if r.perturbation is None]
    by_evaluator = scored.models.by_evaluator if scored.models else {}
    infos = [
        info.model_copy(update={"model": by_evaluator.get(info.evaluator)})
        for info in metric_infos(evaluators)
    ]
    stats = compute_stats(rows, infos, config.iterations)
    stopped = stopped_reason(map_failure)
    return ReportData(
        run_id=context.run_id,
        target=config.target_name,
        target_kind=config.target_kind,
        suite=config.suite_key,
        report_prefix=config.report_prefix,
        started_at=config.started_at,
        finished_at=finished,
        iterations=config.iterations,
        config=shown_config(config),
        metrics=infos,
        stats=stats,
        rows=rows,
        perturbed_rows=[r for r in folded.rows if r.perturbation is not None],
        gates=evaluate_gates(config, stats),
        run_metrics=summarize(
            evaluators,
            [i for i, _ in folded.summary_cases],
            [r for _, r in folded.summary_cases],
            config.max_text_chars,
        ),
        categories=category_stats(rows, infos),
        partial=stopped is not None,
        stopped_reason=stopped,
    )


def shown_config(config: RunConfig) -> dict[str, JsonValue]:
    """The run's configuration as the reports show it: what the user gave, secrets masked,
    and whether judge metrics could run (the judge's own settings stay out)."""
    shown = {
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
        *(("rescored_from",) if config.rescored_from else ()),
    }
    masked: dict[str, JsonValue] = mask_config(config.model_dump(mode="json", include=shown))
    return {**masked, "judge_configured": config.judge is not None}


def compare_with_baseline(
    context: RunContext, data: ReportData
) -> tuple[Regression | None, str | None, list[Problem]]:
    """The comparison with the baseline (None without one), the note saying why there was
    none, and the problems about baselines: sets that failed their manifest, a named
    baseline that is missing (said, and the reports still written)."""
    config = context.config
    missing = None
    rejected: list[str] = []
    try:
        baseline = find_baseline(
            context.store,
            target=config.target_name,
            suite=config.suite_key,
            run_id=context.run_id,
            started_at=config.started_at,
            baseline_run_id=config.baseline,
            rejected=rejected,
        )
    except EvalRunnerError as exc:
        baseline = None
        missing = Problem(
            severity="medium",
            type="baseline_missing",
            description=exc.message,
            suggested_action="name a run id that exists, or leave 'baseline' out to compare "
            "with the previous run",
        )
    regression = compare(data, baseline) if baseline is not None else None
    ignored = baseline_ignored(rejected)
    note = baseline_note(baseline is not None, ignored, missing, config.baseline)
    return regression, note, ignored + ([missing] if missing else [])


def with_problems(
    data: ReportData,
    scored: ScoresFile,
    score_failure: StepFailure | None,
    baseline_problems: list[Problem],
    settings: Settings,
) -> ReportData:
    """The data with its problems (and weak spots, when the run's ``settings`` enable them,
    grouped with their embedding model): a regression first, then models that were not there
    and a failed Score step, the rest by severity, and the baseline problems last."""
    problems = find_problems(data)
    mode = settings.weak_spots
    if weak_spots_enabled(mode):
        used = list(scored.models.models) if scored.models else []
        embedder = question_embedder(used, mode, settings.model_settings)
        spots, method = find_weak_spots(data, *embedder)
        data = data.model_copy(update={"weak_spots": spots, "weak_spots_method": method})
        problems = sorted(problems + weakness_problems(spots), key=problem_order)
    lead = sum(1 for p in problems if p.type == "regression")  # a regression stays first
    problems[lead:lead] = model_problems(scored.notices) + score_step_problems(score_failure)
    return data.model_copy(update={"problems": problems + baseline_problems})


def report_keys(prefix: str) -> RunReports:
    """The keys of a run's report set under ``prefix`` (the manifest's last)."""
    return RunReports(
        details=f"{prefix}details.csv",
        details_xlsx=f"{prefix}details.xlsx",
        result=f"{prefix}result.csv",
        problems=f"{prefix}problems.json",
        insights=f"{prefix}insights.json",
        html=f"{prefix}report.html",
        report=f"{prefix}report.json",
        summary=f"{prefix}summary.json",
        manifest=manifest_key(prefix),
    )


def summarise(built: BuiltReport, state: AggregateState, bucket: str) -> RunSummary:
    """Step 2: the run's summary (``summary.json`` and the execution's output)."""
    config, data, folded = built.config, built.data, built.folded
    failures = [f.text() for f in (state.map_failure, state.score_failure) if f is not None]
    judge_totals = _judge_totals(
        folded.judge_usages, built.scored.judge_usage, answered=folded.answered
    )
    return RunSummary(
        run_id=data.run_id,
        target=config.target_name,
        target_kind=config.target_kind,
        suite=config.suite_key,
        started_at=config.started_at,
        finished_at=data.finished_at,
        iterations=config.iterations,
        cases=config.case_count,
        items=built.item_count,
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
        regression=(RegressionVerdict.of(data.regression) if data.regression is not None else None),
        judge=judge_totals,
        models=built.scored.models,
        problems=[SummaryProblem.of(p) for p in data.problems],
        robustness=[RobustnessSummary.of(p) for p in data.robustness],
        estimate=config.estimate,
        actual=actual_figures(config, built.item_count, judge_totals),
        bucket=bucket,
        reports=report_keys(config.report_prefix),
        verdict=data.verdict,
        rescored_from=config.rescored_from,
    )


def write_report_set(store: RunStore, built: BuiltReport, summary: RunSummary) -> None:
    """Step 3: every file of the report set, then the manifest last: until it exists no
    reader takes the set as complete."""
    data, keys = built.data, summary.reports
    writer = SetWriter(store, data.run_id, built.config.report_prefix)
    infos, stats = data.metrics, data.stats
    writer.put(keys.details, to_csv(*detail_lines(built.every_row, infos)), "text/csv")
    writer.put(
        keys.details_xlsx,
        details_xlsx(built.every_row, infos, stats=stats),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    )
    writer.put(keys.result, to_csv(*result_table(stats, data.categories)), "text/csv")
    writer.put_json(keys.problems, [p.model_dump(mode="json") for p in data.problems])
    writer.put_json(keys.insights, [i.model_dump(mode="json") for i in data.insights])
    writer.put(keys.html, render_report(data).encode("utf-8"), "text/html")
    # model_dump_json's bytes before they are decoded to text: one copy of the biggest file less
    report_json = ReportData.__pydantic_serializer__.to_json(data)
    writer.put(keys.report, report_json, "application/json")
    del report_json
    writer.put_json(keys.summary, summary.model_dump(mode="json"))
    writer.publish()


def _refresh_history(store: RunStore, target: str) -> None:
    """The target's trend page, now including this run. A failure here costs the page, not
    the run: its reports are published already, and the next run rebuilds the page."""
    from evalrunner.reports.writers.history import refresh_history

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


def score_step_problems(score_failure: StepFailure | None) -> list[Problem]:
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


def _judge_totals(
    usages: Sequence[Mapping[str, int]],
    score_step: Mapping[str, int] | None = None,
    *,
    answered: int = 0,
) -> JudgeTotals | None:
    """Judge calls and tokens of the run (each case's ``judge_usage``, and the Score step's
    when an evaluator asked the judge in place of its missing model), and per answered
    case: what the judge cost."""
    if not usages and not score_step:
        return None
    keys = ("calls", "cached", "input_tokens", "output_tokens", "retries", "parse_failures")
    every = [*usages, *([score_step] if score_step else [])]
    totals: dict[str, float] = {k: sum(int(u.get(k, 0)) for u in every) for k in keys}
    # the Score step judges every answered case at once: they are the cases when no
    # per-case metric asked the judge
    cases = len(usages) or answered
    totals["cases"] = cases
    cases = max(1, cases)
    totals["calls_per_case"] = totals["calls"] / cases
    totals["tokens_per_case"] = (totals["input_tokens"] + totals["output_tokens"]) / cases
    return JudgeTotals.model_validate(totals)
