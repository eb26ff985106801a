"""Issue 32 item 6 (a): a ``profile`` in the event fills in its metrics and thresholds; what
the event says itself wins, and an unknown profile is refused naming the known ones."""

from __future__ import annotations

from typing import Any

import pytest

from evalrunner.errors import EventError
from evalrunner.event import parse_event
from evalrunner.run_defaults import SEED_DEFAULT_METRICS

BASE: dict[str, Any] = {
    "key": "test-suites/s.csv",
    "iterations": 1,
    "target": {"url": "https://example.com/ask"},
}


def test_the_seed_profile_is_the_seed_runner_s_nine_metrics_at_deepeval_s_threshold() -> None:
    event = parse_event({**BASE, "profile": "seed-003"})
    assert event.metrics == list(SEED_DEFAULT_METRICS) and len(event.metrics) == 9
    assert event.metrics_explicit
    assert event.thresholds == {name: 0.5 for name in SEED_DEFAULT_METRICS}


def test_the_event_s_own_metrics_and_thresholds_add_to_the_profile() -> None:
    event = parse_event(
        {
            **BASE,
            "profile": "seed-003",
            "metrics": ["Token F1", "Faithfulness"],
            "thresholds": {"Faithfulness": 0.8},
        }
    )
    assert event.metrics == [*SEED_DEFAULT_METRICS, "Token F1"]
    assert event.thresholds["Faithfulness"] == 0.8 and event.thresholds["Bias"] == 0.5


def test_a_legacy_target_metric_adds_to_the_profile() -> None:
    target = {**BASE["target"], "metric": "Token F1"}
    event = parse_event({**BASE, "target": target, "profile": "seed-003"})
    assert set(event.metrics) == {*SEED_DEFAULT_METRICS, "Token F1"} and len(event.metrics) == 10


@pytest.mark.parametrize("profile", ["seed-004", 3])
def test_an_unknown_profile_is_refused_naming_the_known_ones(profile: Any) -> None:
    with pytest.raises(EventError) as caught:
        parse_event({**BASE, "profile": profile})
    assert "is not a profile; use one of seed-003" in str(caught.value)


def test_the_operator_s_default_profile_applies_only_where_the_event_names_no_metric(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """cdk.json "profile" reaches the functions as EVALRUNNER_PROFILE (tests/infra)."""
    monkeypatch.setenv("EVALRUNNER_PROFILE", "seed-003")
    assert parse_event(dict(BASE)).thresholds == {n: 0.5 for n in SEED_DEFAULT_METRICS}
    named = parse_event({**BASE, "metrics": ["Token F1"]})
    assert named.metrics == ["Token F1"] and named.thresholds == {}
    monkeypatch.setenv("EVALRUNNER_PROFILE", "seed-004")
    with pytest.raises(EventError) as caught:
        parse_event(dict(BASE))
    assert "the default profile (EVALRUNNER_PROFILE): 'seed-004' is not a profile" in str(
        caught.value
    )
