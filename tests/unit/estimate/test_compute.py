"""The estimate of a run: it grows with what the run does (iterations, perturbations, metrics,
longer answers), names what it could not price, and prices the GPU only when it is used."""

from __future__ import annotations

from typing import Any

import pytest

from evalrunner.estimate.compute import estimate_run, sample_cases
from evalrunner.estimate.model import RunEstimate
from evalrunner.event import parse_event
from evalrunner.pipeline.prepare import expand, settle
from evalrunner.suite.readers import read_suite

SUITE = (
    b"id,question,expected_answer,expected_contexts\n"
    b"a,How many leave days?,Twenty days a year.,Staff get twenty days of paid leave.\n"
    b"b,Who approves travel?,Your manager approves travel.,Managers approve all travel.\n"
    b"c,When is payday?,The last working day.,Salaries are paid on the last working day.\n"
)
LOGGED = (
    b"id,question,expected_answer,actual_answer,retrieved_contexts\n"
    b"a,How many leave days?,Twenty days.,{answer},Staff get twenty days of paid leave.\n"
)
JUDGE = {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "gpt-4o-mini"}}


def estimate(suite: bytes = SUITE, name: str = "s.csv", **event: Any) -> RunEstimate:
    raw = {
        "key": f"test-suites/{name}",
        "iterations": 1,
        "target": {"lambdaArn": "fn"},
        "metrics": ["Faithfulness"],
        "judge": JUDGE,
        **event,
    }
    if raw["judge"] is None:
        del raw["judge"]
    cases = read_suite(suite, name)
    settled = settle(parse_event(raw), cases)
    return estimate_run(settled, cases, expand(cases, settled.iterations, settled.perturbations))


def test_judge_figures_scale_with_iterations_and_price_the_judge() -> None:
    one, three = estimate(), estimate(iterations=3)
    assert one.judge is not None and three.judge is not None
    assert one.items == 3 and three.items == 9
    assert one.judge.calls > 0 and three.judge.calls == 3 * one.judge.calls
    assert three.judge.input_tokens == pytest.approx(3 * one.judge.input_tokens, abs=2)
    assert one.judge.model == "gpt-4o-mini" and one.judge.cost is not None
    assert one.judge.cost > 0 and three.aws.total > one.aws.total


def test_each_perturbation_adds_a_copy_of_the_cases_it_changes() -> None:
    plain = estimate()
    perturbed = estimate(perturbations=[{"kind": "typos", "intensity": 0.5, "seed": 1}])
    assert perturbed.perturbations == 1 and plain.items < perturbed.items <= 2 * plain.items
    assert perturbed.aws.map_child_executions == perturbed.items
    assert plain.judge is not None and perturbed.judge is not None
    assert perturbed.judge.calls > plain.judge.calls


def test_more_metrics_cost_more_calls_and_a_shared_prompt_is_counted_once() -> None:
    faithfulness = estimate()
    both = estimate(metrics=["Faithfulness", "Answer Relevancy"])
    assert faithfulness.judge is not None and both.judge is not None
    # Answer Relevancy reuses Faithfulness's statements and statement check (cache hits)
    assert both.judge.calls == faithfulness.judge.calls
    five = estimate(
        metrics=[
            "Faithfulness",
            "Answer Relevancy",
            "Contextual Precision",
            "Contextual Recall",
            "Contextual Relevancy",
        ]
    )
    assert five.judge is not None and five.judge.calls > both.judge.calls


def test_a_logged_answer_is_what_is_judged() -> None:
    short = estimate(LOGGED.replace(b"{answer}", b"Twenty."), target={"logged": "x"})
    long_answer = b"Twenty days. " * 60
    long = estimate(LOGGED.replace(b"{answer}", long_answer), target={"logged": "x"})
    assert short.judge is not None and long.judge is not None
    assert long.judge.input_tokens > short.judge.input_tokens + 150  # 60 × 3 tokens
    assert not any("standing in" in note for note in short.notes)
    assert any("standing in" in note for note in estimate().notes)


def test_a_judge_without_prices_or_no_judge_is_said_not_guessed() -> None:
    local = estimate(judge={"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "llama"}})
    assert local.judge is not None and local.judge.cost is None
    assert any("no token prices" in note and "llama" in note for note in local.notes)
    no_judge = estimate(judge=None)
    assert no_judge.judge is not None and no_judge.judge.model is None
    assert any("no judge is configured" in note for note in no_judge.notes)


def test_gpu_minutes_only_when_a_batched_model_metric_runs() -> None:
    lexical = estimate(metrics=["Rouge Metric"], judge=None)
    assert lexical.judge is None and lexical.gpu_minutes == 0 and lexical.aws.batch == 0
    bert = estimate(metrics=["BERT Score"], judge=None, iterations=100)
    assert bert.scored_texts == 2 * 300
    assert bert.gpu_minutes > 0 and bert.aws.batch > 0
    assert bert.aws.gpu_minutes == bert.gpu_minutes


def test_scoring_cpu_costs_the_score_lambda_not_a_gpu_job() -> None:
    gpu = estimate(metrics=["BERT Score"], judge=None, iterations=100)
    cpu = estimate(metrics=["BERT Score"], judge=None, iterations=100, scoring="cpu")
    assert cpu.scored_texts == gpu.scored_texts  # the same texts, scored elsewhere
    assert cpu.gpu_minutes == 0 and cpu.aws.batch == 0
    assert cpu.aws.lambda_gb_seconds > gpu.aws.lambda_gb_seconds
    assert not [n for n in cpu.notes if "GPU minutes" in n]


def test_aws_figures_follow_the_pipeline() -> None:
    run = estimate(iterations=10)
    aws = run.aws
    assert aws.map_child_executions == 30
    assert aws.lambda_requests == 2 + 30 + 1  # Prepare, Aggregate, each case, Score
    assert aws.state_transitions > 30 and aws.s3_puts >= 30
    parts = aws.step_functions + aws.lambda_functions + aws.batch + aws.s3
    assert aws.total == pytest.approx(parts, abs=1e-3)


def test_map_tasks_not_cases_cost_the_invokes_and_transitions() -> None:
    one_each = estimate(iterations=10).aws
    tens = estimate(iterations=10, cases_per_task=10).aws
    assert tens.map_child_executions == 3  # 30 items in tasks of 10
    assert tens.lambda_requests == 2 + 3 + 1
    assert one_each.state_transitions - tens.state_transitions == 3 * (30 - 3)
    assert tens.s3_puts == one_each.s3_puts  # each case still writes its record
    assert tens.total < one_each.total


def test_the_sample_spreads_over_the_suite() -> None:
    cases = list(range(100))
    picked = sample_cases(cases, 4)  # type: ignore[arg-type]
    assert picked == [0, 25, 50, 75]
    assert sample_cases(cases[:3], 8) == [0, 1, 2]  # type: ignore[arg-type]


def test_a_conversation_costs_the_judge_calls_of_its_turns() -> None:
    single = b"question,expected_answer\nHow many leave days?,Twenty days a year.\n"
    conversation = (
        b"conversation_id,question,expected_answer\n"
        b"c,How many leave days?,Twenty days a year.\n"
        b"c,Who approves travel?,Your manager approves travel.\n"
        b"c,When is payday?,The last working day.\n"
    )
    one = estimate(single, metrics=["Answer correctness"])
    three = estimate(conversation, metrics=["Answer correctness"])
    assert one.judge is not None and three.judge is not None
    assert one.items == three.items == 1  # one Map item ...
    assert three.judge.calls == 3 * one.judge.calls > 0  # ... that asks the judge per turn


def test_conversation_metrics_cost_their_calls_once_per_conversation() -> None:
    """The dry judge's stand-in replies must pass the turn checks of conversation metrics:
    two calls for Knowledge retention (facts, then verdicts), one for Conversation relevancy
    and one for Role adherence (the conversation's role column); a conversation metric costs
    nothing per turn and nothing on a single-turn case."""
    conversation = (
        b"conversation_id,question,expected_answer,role\n"
        b"c,My employee id is 4411.,Thanks.,HR assistant\n"
        b"c,Book leave for March 3.,Booked for employee 4411.,\n"
        b"c,How many days are left?,You have 15 days left.,\n"
    )
    metrics = ["Knowledge retention", "Conversation relevancy", "Role adherence"]
    run = estimate(conversation, metrics=metrics)
    assert run.judge is not None and run.judge.calls == 2 + 1 + 1
    single = estimate(b"question,expected_answer\nHi?,Hello.\n", metrics=metrics)
    assert single.judge is not None and single.judge.calls == 0
    per_metric = {m: estimate(conversation, metrics=[m]) for m in metrics}
    assert [per_metric[m].judge.calls for m in metrics] == [2, 1, 1]  # type: ignore[union-attr]
    assert per_metric["Knowledge retention"].judge.input_tokens > 0  # type: ignore[union-attr]
