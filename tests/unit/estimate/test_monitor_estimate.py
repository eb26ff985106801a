"""Issue 34 item 5: a day of 100,000 interactions sampled at 5% fits the deployed pipeline's
limits, and the cost estimate covers monitor runs (``evalrunner estimate --monitor-per-day``).
The checks are computed from the pipeline's own rules (Prepare's slicing, the suite limits,
the price table's per-case assumptions), so a change to any of them moves these numbers."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.cli.common import EXIT_INPUT
from evalrunner.estimate.monitor import estimate_monitor
from evalrunner.estimate.prices import load_prices
from evalrunner.event import parse_event
from evalrunner.input_limits import SuiteLimits
from evalrunner.pipeline.batching import auto_cases_per_task, batches
from evalrunner.suite.model import Suite, TestCase

JUDGE = {"bedrock": {"model_id": "anthropic.claude-3-5-haiku-20241022-v1:0"}}
METRICS = ["Language mismatch", "Faithfulness", "Answer Relevancy"]
WORDS = "the leave policy gives employees twenty days of paid annual leave per year".split()


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def sample(answer_words: int = 220, context_words: int = 150, n: int = 12) -> Suite:
    """Interactions shaped like RAG traffic (about 4 KB each by default)."""
    rng = random.Random(3)
    cases = [
        TestCase(
            index=i,
            case_id=f"i{i}",
            question=words(rng, 20) + "?",
            answer=words(rng, answer_words),
            contexts=[words(rng, context_words) for _ in range(3)],
        )
        for i in range(n)
    ]
    return Suite(name="sample", source="sample.json", cases=cases)


def event(**fields):
    raw = {
        "key": "test-suites/_monitor/prod-hr/r.json",
        "iterations": 1,
        "target": {"logged": "prod-hr"},
        "metrics": METRICS,
        "judge": JUDGE,
        **fields,
    }
    return parse_event(raw)


def checks(estimate):
    return {c.what: c for c in estimate.checks}


def test_a_day_of_100000_interactions_at_5_percent_fits_every_limit():
    day = estimate_monitor(event(), sample(), per_day=100_000, share=0.05, runs_per_day=24)
    assert day.interactions_per_run == 208  # 5,000 a day in hourly runs
    assert day.fits, [c for c in day.checks if not c.fits]
    found = checks(day)
    # the Map: Prepare's own slicing of 208 cases at the event's concurrency (10)
    per_task = auto_cases_per_task(208, 10)
    assert day.run.aws.map_child_executions == len(batches(208, per_task))
    assert found["Map tasks in flight"].needs == 10
    # three judge metrics: calls per case from the metrics' own prompts (dry judge)
    assert day.run.judge is not None and day.run.judge.calls > 208
    assert found["one RunCase task (Lambda time)"].needs < 900
    assert found["suite size per run (Prepare)"].needs < 1  # MiB
    # the day's cost is the runs' and what only a monitor adds
    assert day.judge_cost_per_day == pytest.approx(day.run.judge.cost * 24, rel=1e-3)
    assert day.aws_cost_per_day == pytest.approx(
        day.run.aws.total * 24 + day.monitor.monitor_lambda + day.monitor.cloudwatch, abs=1e-3
    )
    assert day.total_per_month == pytest.approx(day.total_per_day * 30, abs=0.01)
    assert day.monitor.custom_metrics == 6  # Average and PassRate of three metrics


def test_the_same_day_in_one_daily_run_still_fits_and_is_priced_the_same():
    hourly = estimate_monitor(event(), sample(), per_day=100_000, share=0.05, runs_per_day=24)
    daily = estimate_monitor(event(), sample(), per_day=100_000, share=0.05, runs_per_day=1)
    assert daily.interactions_per_run == 5_000 and daily.fits
    # a task's time: Prepare's slice (62 cases) x a case's time (the price table's base and
    # judge seconds per call)
    a = load_prices().assumptions
    judge = daily.run.judge
    assert judge is not None
    case_seconds = (
        a.run_case_seconds_base + judge.calls / daily.run.items * a.judge_seconds_per_call
    )
    task = checks(daily)["one RunCase task (Lambda time)"]
    assert task.needs == pytest.approx(auto_cases_per_task(5_000, 10) * case_seconds, abs=0.01)
    # the judge's cost is per interaction, whatever the schedule
    assert daily.judge_cost_per_day == pytest.approx(hourly.judge_cost_per_day, rel=0.02)


def test_a_limit_that_does_not_fit_says_what_to_change():
    """Long interactions (about 12 KB) in one daily run: the suite Prepare reads is too big."""
    big = sample(answer_words=600, context_words=500)
    daily = estimate_monitor(event(), big, per_day=100_000, share=0.05, runs_per_day=1)
    size = checks(daily)["suite size per run (Prepare)"]
    assert not daily.fits and not size.fits
    assert size.limit == SuiteLimits().megabytes and size.needs > size.limit
    assert "run the monitor more often" in size.advice
    hourly = estimate_monitor(event(), big, per_day=100_000, share=0.05, runs_per_day=24)
    assert hourly.fits


def test_the_monitor_function_reads_every_new_record_not_only_the_sampled():
    one = estimate_monitor(event(), sample(), per_day=100_000, share=0.05, runs_per_day=24)
    ten = estimate_monitor(event(), sample(), per_day=1_000_000, share=0.005, runs_per_day=24)
    assert one.interactions_per_run == ten.interactions_per_run
    memory = "monitor function (Lambda memory)"
    assert checks(ten)[memory].needs > checks(one)[memory].needs


def write_sample(path: Path) -> Path:
    rows = [
        {
            "id": c.case_id,
            "question": c.question,
            "actual_answer": c.answer,
            "retrieved_contexts": c.contexts,
        }
        for c in sample().cases
    ]
    path.write_text(json.dumps(rows), "utf-8")
    return path


def test_the_cli_estimates_monitoring(tmp_path):
    suite = write_sample(tmp_path / "interactions.json")
    args = ["estimate", "--suite", str(suite), "--judge", json.dumps(JUDGE)]
    args += [a for m in METRICS for a in ("--metric", m)]
    args += ["--monitor-per-day", "100000", "--sample", "5%", "--runs-per-day", "24"]
    result = CliRunner().invoke(app, [*args, "--alarms", "2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["fits"] is True and data["interactions_per_run"] == 208
    assert data["monitor"]["alarms"] == 2 and data["total_per_month"] > 0
    table = CliRunner().invoke(app, args)
    assert table.exit_code == 0, table.output
    assert "interactions scored per run" in table.output and "fits" in table.output
    count = CliRunner().invoke(
        app, [*args[:-6], "--monitor-per-day", "100000", "--sample", "200", "--json"]
    )
    assert json.loads(count.output)["interactions_per_run"] == 200


@pytest.mark.parametrize(
    ("sample_arg", "message"), [("lots", "give a share"), ("150%", "at most 100%")]
)
def test_a_bad_sample_is_refused(tmp_path, sample_arg, message):
    suite = write_sample(tmp_path / "interactions.json")
    args = [
        "estimate",
        "--suite",
        str(suite),
        "--monitor-per-day",
        "100000",
        "--sample",
        sample_arg,
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == EXIT_INPUT
    assert message in result.output
