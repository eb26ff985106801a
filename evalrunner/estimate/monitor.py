"""What monitoring production costs, and whether a day's traffic fits the deployed pipeline.

A monitor run is an ordinary run of logged answers (no target call), so its cost is
:func:`~evalrunner.estimate.compute.estimate_run` of a run the size of one scheduled sample,
times the runs a day, plus what only a monitor adds: the scheduled function that reads the
logs and masks the chosen interactions, and the CloudWatch series and alarms. The sample
interactions (a suite file with logged answers) give the sizes: text per interaction, the
judge's prompts.

The limits are the deployed pipeline's, as cdk.json's defaults set them; each check says
which limit, the value this volume needs, and what to change when it does not fit.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.estimate.compute import estimate_run
from evalrunner.estimate.model import RunEstimate
from evalrunner.estimate.prices import PriceTable, load_prices
from evalrunner.event import RunEvent
from evalrunner.input_limits import SuiteLimits
from evalrunner.pipeline.batching import auto_cases_per_task, batches
from evalrunner.pipeline.prepare import expand
from evalrunner.suite.model import Suite, TestCase

#: Masking (evalrunner/privacy.py) per KB of an interaction's text: bench/bench_pii_mask.py,
#: text with PII in every fiftieth word (5 ms/KB on the shared 2-core box under load, up to
#: 3.9 ms/KB with street addresses masked too in a later measure; text without PII under
#: 1 ms/KB), rounded up.
MASK_MS_PER_KB = 6.0
#: What masking personal names adds (a spaCy NER model, cdk.json monitor.pii.ner_model):
#: bench/bench_pii_mask.py --names, 13-31 ms/KB on the same box, rounded up.
MASK_NAMES_MS_PER_KB = 30.0
#: Reading and parsing log files in the monitor function (S3 GET and JSON), MB per second.
READ_MB_PER_SECOND = 20.0
#: The monitor holds the interactions it read: bytes of memory per byte of log (Python
#: strings and models around the JSON text).
MEMORY_PER_LOG_BYTE = 4.0
#: Columns of a monitor suite row (id, question, actual_answer, retrieved_contexts, ids/time).
SUITE_COLUMNS = 7
#: A monitor run's event (key, target, metrics, run id): a few hundred bytes, whatever the
#: run's size, since the cases travel in S3.
RUN_EVENT_BYTES = 600
#: Step Functions' limit on an execution's input and on any state's data.
STATE_PAYLOAD_BYTES = 256 * 1024
DAYS_PER_MONTH = 30


class DeployedLimits(BaseModel):
    """The deployed pipeline's limits a monitor run meets (cdk.json defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The case runner's reserved concurrency (cdk.json case_runner_reserved_concurrency):
    #: an event's max_concurrency is capped to it.
    case_runner_concurrency: int = 50
    run_case_timeout_seconds: int = 900
    aggregate_timeout_seconds: int = 600
    aggregate_memory_mb: int = 2048
    monitor_timeout_seconds: int = 900
    monitor_memory_mb: int = 3008
    suite: SuiteLimits = Field(default_factory=SuiteLimits)


class LimitCheck(BaseModel):
    """One limit: what this volume needs against what the deployment allows."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    what: str
    needs: float
    limit: float
    unit: str
    fits: bool
    #: What to change when it does not fit (and what keeps it from failing when it is close).
    advice: str


class MonitorCost(BaseModel):
    """What only a monitor adds to its runs' cost, per day."""

    model_config = ConfigDict(extra="forbid")

    monitor_gb_seconds: float
    monitor_lambda: float
    metric_datapoints: int
    custom_metrics: int
    alarms: int
    cloudwatch: float


class MonitorEstimate(BaseModel):
    """A day of monitoring: one run's estimate, the day's and the month's totals, the checks."""

    model_config = ConfigDict(extra="forbid")

    interactions_per_day: int
    sample_share: float
    runs_per_day: float
    interactions_per_run: int
    #: Text of one interaction (question, answer, contexts), from the sample, in bytes.
    bytes_per_interaction: int
    run: RunEstimate
    monitor: MonitorCost
    judge_cost_per_day: float | None
    aws_cost_per_day: float
    total_per_day: float | None
    total_per_month: float | None
    checks: list[LimitCheck]
    currency: str
    notes: list[str] = Field(default_factory=list)

    @property
    def fits(self) -> bool:
        return all(check.fits for check in self.checks)


def interaction_bytes(cases: Sequence[TestCase]) -> int:
    """Mean bytes of text of the sample's interactions (UTF-8, as the monitor's suite holds
    them)."""
    if not cases:
        return 0
    total = 0
    for case in cases:
        texts = [case.question, case.answer or "", *(case.contexts or [])]
        total += sum(len(t.encode("utf-8")) for t in texts)
    return round(total / len(cases))


def run_of(sample: Suite, size: int) -> Suite:
    """A suite of ``size`` interactions made of ``sample``'s, each repeated in one block (the
    first ``size / len(sample)`` are its first, ...), so the cases the estimate builds judge
    prompts for, spread evenly over the run, are spread evenly over the sample whatever the
    run's size: one run's cost per interaction is the same hourly or daily."""
    n = len(sample.cases)
    cases = [
        sample.cases[i * n // size].model_copy(
            update={"index": i, "case_id": f"interaction-{i + 1:06d}"}
        )
        for i in range(size)
    ]
    return sample.model_copy(update={"cases": cases})


def estimate_monitor(
    event: RunEvent,
    sample: Suite,
    *,
    per_day: int,
    share: float,
    runs_per_day: float,
    alarms: int = 0,
    mask_names: bool = False,
    limits: DeployedLimits | None = None,
    prices: PriceTable | None = None,
) -> MonitorEstimate:
    """The cost of scoring ``share`` of ``per_day`` interactions a day in ``runs_per_day``
    scheduled runs like ``event`` (its metrics and judge), and the deployed limits each run
    meets. ``sample`` holds example interactions with their logged answers; ``mask_names``:
    the monitor also masks personal names with an NER model."""
    limits = limits or DeployedLimits()
    prices = prices or load_prices()
    if not sample.cases:
        raise ValueError("the sample has no interactions")
    per_run = max(1, round(per_day * share / runs_per_day))
    suite = run_of(sample, per_run)
    run = estimate_run(event, suite, expand(suite, 1))
    size = interaction_bytes(sample.cases)
    read_per_run = per_day / runs_per_day * size  # every new record is read, sampled or not

    monitor_seconds = 2.0 + read_per_run / 1e6 / READ_MB_PER_SECOND
    mask_ms_per_kb = MASK_MS_PER_KB + (MASK_NAMES_MS_PER_KB if mask_names else 0.0)
    monitor_seconds += per_run * size / 1024 * mask_ms_per_kb / 1000
    gb_seconds = monitor_seconds * limits.monitor_memory_mb / 1024 * runs_per_day
    monitor_lambda = gb_seconds * prices.lambda_.per_gb_second
    primary = len(event.metrics)  # an upper bound: one primary metric per evaluator
    datapoints = round(2 * primary * runs_per_day)
    custom = 2 * primary
    cw = prices.cloudwatch
    cloudwatch = (
        custom * cw.per_metric_month / DAYS_PER_MONTH
        + runs_per_day / 1000 * cw.per_1000_requests
        + alarms * cw.per_anomaly_alarm_month / DAYS_PER_MONTH
    )
    monitor = MonitorCost(
        monitor_gb_seconds=round(gb_seconds, 1),
        monitor_lambda=round(monitor_lambda, 4),
        metric_datapoints=datapoints,
        custom_metrics=custom,
        alarms=alarms,
        cloudwatch=round(cloudwatch, 4),
    )
    judge_day: float | None
    if run.judge is None:
        judge_day = 0.0
    elif run.judge.cost is None:
        judge_day = None  # no price listed for the judge's model: said in the run's notes
    else:
        judge_day = run.judge.cost * runs_per_day
    aws_day = run.aws.total * runs_per_day + monitor_lambda + cloudwatch
    total_day = None if judge_day is None else judge_day + aws_day
    checks = limit_checks(event, run, per_run, size, read_per_run, monitor_seconds, limits, prices)
    notes = [
        f"{per_day:,} interactions a day, {share:.1%} sampled, in {runs_per_day:g} runs: "
        f"{per_run:,} interactions a run",
        *(
            [f"names masked with an NER model: {mask_ms_per_kb:g} ms of masking per KB"]
            if mask_names
            else []
        ),
        *run.notes,
    ]
    return MonitorEstimate(
        interactions_per_day=per_day,
        sample_share=share,
        runs_per_day=runs_per_day,
        interactions_per_run=per_run,
        bytes_per_interaction=size,
        run=run,
        monitor=monitor,
        judge_cost_per_day=None if judge_day is None else round(judge_day, 4),
        aws_cost_per_day=round(aws_day, 4),
        total_per_day=None if total_day is None else round(total_day, 4),
        total_per_month=None if total_day is None else round(total_day * DAYS_PER_MONTH, 2),
        checks=checks,
        currency=prices.currency,
        notes=notes,
    )


def limit_checks(
    event: RunEvent,
    run: RunEstimate,
    per_run: int,
    size: int,
    read_per_run: float,
    monitor_seconds: float,
    limits: DeployedLimits,
    prices: PriceTable,
) -> list[LimitCheck]:
    """Each deployed limit one monitor run of ``per_run`` interactions meets."""
    a = prices.assumptions
    concurrency = min(event.max_concurrency, limits.case_runner_concurrency)
    per_task = event.cases_per_task or auto_cases_per_task(per_run, concurrency)
    tasks = len(batches(per_run, per_task))
    calls_per_case = (run.judge.calls / run.items) if run.judge and run.items else 0.0
    case_seconds = a.run_case_seconds_base + calls_per_case * a.judge_seconds_per_call
    suite_mb = per_run * (size + 200) / (1024 * 1024)  # + the row's ids, time and JSON
    report_mb = per_run * (size * 1.5 + 2000) / (1024 * 1024)  # rows with their results
    aggregate_seconds = a.aggregate_seconds_base + a.aggregate_seconds_per_item * per_run
    memory_mb = read_per_run * MEMORY_PER_LOG_BYTE / (1024 * 1024) + 300
    event_bytes = len(json.dumps({"metrics": list(event.metrics)})) + RUN_EVENT_BYTES

    def check(what: str, needs: float, limit: float, unit: str, advice: str) -> LimitCheck:
        return LimitCheck(
            what=what,
            needs=round(needs, 2),
            limit=limit,
            unit=unit,
            fits=needs <= limit,
            advice=advice,
        )

    return [
        check(
            "suite rows per run (Prepare)",
            per_run,
            limits.suite.rows,
            "rows",
            "run the monitor more often, or sample fewer (EVALRUNNER_MAX_SUITE_ROWS raises it)",
        ),
        check(
            "suite size per run (Prepare)",
            suite_mb,
            limits.suite.megabytes,
            "MiB",
            "run the monitor more often, or sample fewer (EVALRUNNER_MAX_SUITE_MB raises it)",
        ),
        check(
            "suite cells per run (Prepare)",
            per_run * SUITE_COLUMNS,
            limits.suite.cells,
            "cells",
            "run the monitor more often, or sample fewer",
        ),
        check(
            "Map tasks in flight",
            min(tasks, concurrency),
            limits.case_runner_concurrency,
            "tasks",
            "the event's max_concurrency is capped to the case runner's reserved concurrency",
        ),
        check(
            "one RunCase task (Lambda time)",
            per_task * case_seconds,
            limits.run_case_timeout_seconds,
            "s",
            "a task near its limit hands its remaining cases to a new one (MoreCases); set "
            "cases_per_task lower to keep tasks short",
        ),
        check(
            "the run's event (Step Functions input)",
            event_bytes,
            STATE_PAYLOAD_BYTES,
            "bytes",
            "cases travel in S3; only references are in the state",
        ),
        check(
            "Aggregate (Lambda time)",
            aggregate_seconds,
            limits.aggregate_timeout_seconds,
            "s",
            "run the monitor more often: Aggregate's time grows with the run",
        ),
        check(
            "Aggregate report.json (Lambda memory)",
            report_mb * 4 + 300,
            limits.aggregate_memory_mb,
            "MiB",
            "run the monitor more often",
        ),
        check(
            "monitor function (Lambda time)",
            monitor_seconds,
            limits.monitor_timeout_seconds,
            "s",
            "run it more often: each run reads the logs of its own interval",
        ),
        check(
            "monitor function (Lambda memory)",
            memory_mb,
            limits.monitor_memory_mb,
            "MiB",
            "run it more often, or raise cdk.json monitor.memory_mb (up to 10240)",
        ),
    ]


__all__ = ["DeployedLimits", "LimitCheck", "MonitorEstimate", "estimate_monitor"]
