"""Named sets of metrics and thresholds an event (``profile``), ``evalrunner run --profile`` or
``evaluate(profile=...)`` selects in one word.

``seed-003`` reproduces the seed test runner as its users wrote it: its nine metrics with
DeepEval's default threshold, 0.5, on every one of them (DeepEval's ``BaseMetric`` default,
which the seed's own Rouge and BERT Score metrics kept, and the default of each of its judge
metrics; for Bias and Toxicity, where lower is better, a case passes at 0.5 or below). With
it, ``result.csv`` has the seed's nine named rows, one per metric, at the seed's thresholds.

A profile fills in the event; what the event says itself wins: metrics it names are added
after the profile's, and its own ``thresholds`` replace the profile's for the metrics they name.
An event that names no metric and no profile gets the operator's default profile, when one
is set (deployed: cdk.json ``profile``; locally ``EVALRUNNER_PROFILE`` or the config file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalrunner import run_defaults
from evalrunner.errors import ConfigError


@dataclass(frozen=True)
class Profile:
    """A named selection: the evaluators, in order, and their thresholds (by evaluator name,
    meaning its primary metric, or by metric name)."""

    name: str
    description: str
    metrics: tuple[str, ...]
    thresholds: Mapping[str, float] = field(default_factory=dict)


#: DeepEval's default threshold of every metric (``BaseMetric.threshold``).
DEEPEVAL_THRESHOLD = 0.5

PROFILES: dict[str, Profile] = {
    "seed-003": Profile(
        name="seed-003",
        description="the seed test runner's nine metrics at DeepEval's default threshold 0.5",
        metrics=run_defaults.SEED_DEFAULT_METRICS,
        thresholds={name: DEEPEVAL_THRESHOLD for name in run_defaults.SEED_DEFAULT_METRICS},
    ),
}


def known() -> str:
    return ", ".join(sorted(PROFILES))


def expand(
    raw: dict[str, Any], defaults: run_defaults.RunDefaults
) -> tuple[dict[str, Any], list[str]]:
    """``raw`` with its ``profile``'s metrics and thresholds filled in, and the problems
    (an unknown profile); an event without a profile comes back as it was. ``defaults``:
    the operator's, as the run's settings read them (its default profile)."""
    name = raw.get("profile")
    where = "profile"
    if name is None and not _names_metrics(raw):
        try:
            default = defaults.default_profile()
        except ConfigError as exc:
            return raw, [exc.message]
        if default is not None:
            name, where = default[0], f"the default profile ({default[1]})"
    if name is None:
        return raw, []
    profile = PROFILES.get(name) if isinstance(name, str) else None
    if profile is None:
        return raw, [f"{where}: {name!r} is not a profile; use one of {known()}"]
    named = raw.get("metrics")
    extra = [m for m in named if m not in profile.metrics] if isinstance(named, list) else []
    own = raw.get("thresholds")
    thresholds = {**profile.thresholds, **(own if isinstance(own, dict) else {})}
    return {**raw, "metrics": [*profile.metrics, *extra], "thresholds": thresholds}, []


def _names_metrics(raw: dict[str, Any]) -> bool:
    target = raw.get("target")
    return raw.get("metrics") is not None or (isinstance(target, dict) and "metric" in target)
