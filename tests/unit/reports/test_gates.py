"""Gates and thresholds named by metric and by evaluator, for every registered evaluator.

The registry is iterated, so an evaluator added later is covered without touching this file.
"""

from __future__ import annotations

import pytest

from evalrunner.cli import _pairs
from evalrunner.evaluators import registry
from evalrunner.event import parse_event
from evalrunner.pipeline.aggregate import evaluate_gates
from evalrunner.reports.model import MetricStats
from evalrunner.run import RunConfig

#: Evaluators whose display name is not the name of their primary metric: a gate or a
#: threshold naming the evaluator must reach that primary metric.
RENAMED = sorted(
    name for name, cls in registry.available().items() if cls.primary_metric().name != name
)


def gated_metric(name: str):
    """What a gate or threshold named ``name`` reaches: the metric of that name when the
    evaluator has one (metric names come first: "Coherence (1-5)" is the raw 1-5 metric of
    the evaluator of the same name), else the evaluator's primary metric."""
    cls = registry.resolve(name)
    return next((m for m in cls.metrics if m.name == name), cls.primary_metric())


def test_the_registry_has_renamed_evaluators():
    # the README's own example ("Rouge Metric" → ROUGE-L) is among them
    assert "Rouge Metric" in RENAMED and len(RENAMED) > 10


def config(fail_under: dict[str, float], metrics: list[str]) -> RunConfig:
    return RunConfig(
        run_id="r",
        bucket="b",
        suite_key="test-suites/s.csv",
        suite_name="s",
        target={"lambdaArn": "fn"},
        target_kind="lambdaArn",
        target_name="fn",
        iterations=1,
        metrics=metrics,
        fail_under=fail_under,
        started_at="2026-11-22T09:30:05+00:00",
        report_prefix="test-reports/fn/261122-093005-",
        case_count=1,
        item_count=1,
    )


def run_stats(name: str, average_of: dict[str, float]) -> list[MetricStats]:
    """Run-wide stats of every metric of the evaluator, with the given averages (every other
    metric at its worst)."""
    cls = registry.resolve(name)
    primary = cls.primary_metric().name
    return [
        MetricStats(
            metric=m.name,
            evaluator=cls.name,
            primary=m.name == primary,
            threshold=m.threshold,
            higher_is_better=m.higher_is_better,
            average=average_of.get(m.name, _bad(m)),
            count=1,
        )
        for m in cls.metrics
    ]


def _bad(spec) -> float:
    """A value that fails any gate placed inside the range: the worst end of it."""
    worst = spec.low if spec.higher_is_better else spec.high
    return worst if worst != float("inf") else 1e9


def _gate_value(spec) -> float:
    return spec.low + (min(spec.high, spec.low + 10) - spec.low) / 2


@pytest.mark.parametrize("name", RENAMED)
def test_a_gate_named_by_the_evaluator_gates_its_primary_metric(name):
    primary = gated_metric(name)
    value = _gate_value(primary)
    # the primary metric meets the gate exactly; every other metric is at its worst
    stats = run_stats(name, {primary.name: value})
    [gate] = evaluate_gates(config({name: value}, [name]), stats)
    assert gate.model_dump() == {
        "metric": primary.name,
        "gate": name,
        "threshold": value,
        "average": value,
        "passed": True,
        "higher_is_better": primary.higher_is_better,
    }
    # and it fails when the primary metric misses it
    worse = value - 0.1 if primary.higher_is_better else value + 0.1
    [gate] = evaluate_gates(config({name: value}, [name]), run_stats(name, {primary.name: worse}))
    assert gate.metric == primary.name and gate.passed is False


@pytest.mark.parametrize("name", RENAMED)
def test_a_gate_named_by_each_metric_gates_that_metric(name):
    cls = registry.resolve(name)
    for spec in cls.metrics:
        value = _gate_value(spec)
        [gate] = evaluate_gates(
            config({spec.name: value}, [name]), run_stats(name, {spec.name: value})
        )
        assert gate.metric == spec.name and gate.passed is True, spec.name


@pytest.mark.parametrize("name", RENAMED)
def test_a_threshold_named_by_the_evaluator_sets_its_primary_metric(name):
    cls = registry.resolve(name)
    primary = gated_metric(name)
    value = _gate_value(primary) + 0.01
    evaluator = cls({name: value})
    assert evaluator.threshold(primary.name) == value
    for spec in cls.metrics:
        if spec is not primary:
            assert evaluator.threshold(spec.name) == spec.threshold  # untouched
        assert cls({spec.name: value}).threshold(spec.name) == value  # by metric name


@pytest.mark.parametrize("name", RENAMED)
def test_the_event_accepts_gates_and_thresholds_named_by_the_evaluator(name):
    value = _gate_value(gated_metric(name))
    event = parse_event(
        {
            "key": "test-suites/s.csv",
            "iterations": 1,
            "target": {"lambdaArn": "fn"},
            "metrics": [name],
            # what --fail-under / --threshold turn the CLI's NAME=VALUE into
            "fail_under": _pairs([f"{name}={value}"], "--fail-under"),
            "thresholds": _pairs([f"{name}={value}"], "--threshold"),
        }
    )
    assert event.fail_under == {name: value} and event.thresholds == {name: value}


def test_a_metric_gate_wins_over_an_evaluator_of_the_same_name():
    # "Toxicity" is both an evaluator and (its primary) metric: one answer, not two
    stats = run_stats("Toxicity", {"Toxicity": 0.1})
    [gate] = evaluate_gates(config({"Toxicity": 0.2}, ["Toxicity"]), stats)
    assert gate.metric == "Toxicity" and gate.passed is True


def test_an_unknown_gate_fails_without_a_match():
    [gate] = evaluate_gates(config({"nope": 0.5}, ["BLEU"]), run_stats("BLEU", {}))
    assert gate.metric == "nope" and gate.average is None and gate.passed is False
