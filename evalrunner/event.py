"""The run event: the JSON contract shared by the CLI, the upload trigger, schedules and the
state machine. Defined by :class:`evalrunner.event_schema.EventSpec` and the target kinds'
spec models, validated by them (their errors worded as the JSON Schema generated from them
says, :mod:`evalrunner.event_messages`), then checked for what a schema cannot say (suite key
safety, metric names and ranges, evaluator options, allowed secrets, the network policy)."""

from __future__ import annotations

import copy
import json
import os
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner import redaction, run_defaults
from evalrunner.errors import ConfigError, EventError
from evalrunner.evaluators import registry
from evalrunner.evaluators.base import Requirement
from evalrunner.event_messages import event_problems
from evalrunner.event_rules import SUITE_EXTENSIONS as SUITE_EXTENSIONS
from evalrunner.event_rules import SUITE_PREFIX as SUITE_PREFIX
from evalrunner.event_rules import pydantic_problems as pydantic_problems
from evalrunner.event_schema import EventSpec
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.reports.verdict import DEFAULT_MAX_ERROR_SHARE, FailOn, VerdictPolicy
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS
from evalrunner.targets import registry as target_registry
from evalrunner.targets.spec import TargetSpec

DEFAULT_MAX_CONCURRENCY = 10
#: The deployment's reserved concurrency of the case runner (cdk.json
#: ``case_runner_reserved_concurrency``, set on the functions by the stack): an event's
#: ``max_concurrency`` above it is capped to it. More tasks at once than the function may run
#: would only be throttled (TooManyRequestsException) and retried.
ENV_CONCURRENCY_CAP = "EVALRUNNER_MAX_CONCURRENCY"
DEFAULT_TOLERATED_FAILURE_PERCENTAGE = 100.0


class RunEvent(BaseModel):
    """A validated event. ``metrics`` is the resolved evaluator selection (display names)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    iterations: int = Field(ge=1)
    #: The target object as the event gave it: what the manifest carries to each case.
    target: dict[str, Any]
    #: The same, typed: the kind's own spec model (BedrockAgentSpec, HttpSpec, ...).
    target_spec: TargetSpec
    metrics: list[str]
    #: False when ``metrics`` is the default selection (the event named none).
    metrics_explicit: bool = True
    thresholds: dict[str, float] = Field(default_factory=dict)
    fail_under: dict[str, float] = Field(default_factory=dict)
    evaluator_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    baseline: str | None = None
    #: What fails the run (``fail_on``, ``fail_on_regression``, ``max_error_share``).
    policy: VerdictPolicy = Field(default_factory=VerdictPolicy)
    judge: dict[str, Any] | None = None
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    #: What the event asked for when it was more than the deployment allows (then
    #: ``max_concurrency`` is the cap): :func:`concurrency_notice` says so.
    max_concurrency_requested: int | None = None
    #: None: Prepare chooses from the run's size (see :mod:`evalrunner.pipeline.batching`).
    cases_per_task: int | None = None
    tolerated_failure_percentage: float = DEFAULT_TOLERATED_FAILURE_PERCENTAGE
    #: "cpu": never the GPU Batch job, the Score Lambda scores in-process.
    scoring: Literal["auto", "cpu"] = "auto"
    run_id: str | None = None
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS
    #: Resolved (intensity and name filled in); empty: no robustness run.
    perturbations: list[PerturbationSpec] = Field(default_factory=list)

    @property
    def target_kind(self) -> str:
        return target_registry.detect_kind(self.target)

    @classmethod
    def from_spec(cls, spec: EventSpec, *, target: dict[str, Any]) -> RunEvent:
        """The run ``spec`` describes, its defaults and the deployment's cap applied;
        ``target``: the target object as the event gave it (carried to every case)."""
        resolved = spec.resolution
        concurrency, requested = _capped_concurrency(spec.max_concurrency)
        return cls(
            key=spec.key,
            iterations=spec.iterations,
            target=target,
            target_spec=spec.target,
            metrics=resolved.metrics,
            metrics_explicit=resolved.metrics_explicit,
            thresholds=spec.thresholds or {},
            fail_under=spec.fail_under or {},
            evaluator_options=resolved.evaluator_options,
            baseline=spec.baseline,
            policy=VerdictPolicy(
                fail_on=FailOn(spec.fail_on or FailOn.FAILURES),
                fail_on_regression=bool(spec.fail_on_regression),
                max_error_share=(
                    DEFAULT_MAX_ERROR_SHARE
                    if spec.max_error_share is None
                    else spec.max_error_share
                ),
            ),
            judge=resolved.judge,
            max_concurrency=concurrency,
            max_concurrency_requested=requested,
            cases_per_task=spec.cases_per_task,
            tolerated_failure_percentage=spec.tolerated_failure_percentage,
            scoring=spec.scoring,
            run_id=spec.run_id,
            max_text_chars=spec.max_text_chars,
            perturbations=resolved.perturbations,
        )


@cache
def _schema() -> dict[str, Any]:
    text = resources.files("evalrunner.schemas").joinpath("event.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def event_schema() -> dict[str, Any]:
    """The event's JSON Schema, with the metric names of this release filled in."""
    schema = copy.deepcopy(_schema())
    names = list(registry.available())
    schema["properties"]["metrics"]["items"]["enum"] = names
    selection = schema["$defs"]["metricSelection"]["oneOf"]
    selection[0]["enum"] = names
    selection[1]["items"]["enum"] = names
    return schema


def parse_event(raw: Any, *, suite_prefix: str = SUITE_PREFIX) -> RunEvent:
    """Validate a raw event and return it resolved; every problem is reported in one error."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise EventError(f"event: not valid JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise EventError(f"event: must be a JSON object, got {type(raw).__name__}")

    redaction.register_event(raw)  # before anything can log or echo it
    try:
        spec = EventSpec.model_validate(raw, context={"suite_prefix": suite_prefix})
    except ValidationError as exc:
        kinds = {k: c.spec_model for k, c in target_registry.available().items()}
        raise EventError(event_problems(exc, kinds)) from None
    return RunEvent.from_spec(spec, target=raw["target"])


def concurrency_cap() -> int | None:
    """The deployment's cap on ``max_concurrency`` (:data:`ENV_CONCURRENCY_CAP`), or None."""
    value = os.environ.get(ENV_CONCURRENCY_CAP, "").strip()
    if not value:
        return None
    try:
        cap = int(value)
    except ValueError:
        raise ConfigError(
            f"{ENV_CONCURRENCY_CAP}={value!r} is not a whole number (it is the case runner's "
            "reserved concurrency, cdk.json case_runner_reserved_concurrency)"
        ) from None
    return cap if cap >= 1 else None


def _capped_concurrency(requested: int) -> tuple[int, int | None]:
    """(max_concurrency to run with, what the event asked for when it was capped)."""
    cap = concurrency_cap()
    if cap is not None and requested > cap:
        return cap, requested
    return requested, None


def concurrency_notice(event: RunEvent) -> str | None:
    """Why the run uses fewer concurrent tasks than its event asked for, or None."""
    if event.max_concurrency_requested is None:
        return None
    return (
        f"max_concurrency {event.max_concurrency_requested} is capped to "
        f"{event.max_concurrency}, the case runner's reserved concurrency "
        "(cdk.json case_runner_reserved_concurrency): more tasks at once would only be "
        "throttled. Raise the reservation there and redeploy to run more cases at once."
    )


def left_out_by_default(event: RunEvent) -> list[str]:
    """What a run that named no metric left out of the seed runner's default set (or of the
    operator's, when configured), and why: so a local run without models or judge says what
    it did not measure instead of looking complete."""
    if event.metrics_explicit:
        return []
    try:
        wanted = run_defaults.default_metrics() or list(run_defaults.SEED_DEFAULT_METRICS)
        classes = registry.resolve_all(wanted)
    except ConfigError:
        return []
    out = []
    for cls in classes:
        if cls.name in event.metrics:
            continue
        if cls.requires is Requirement.JUDGE and event.judge is None:
            why = f"no judge is configured (event judge, {run_defaults.ENV_JUDGE} or a config file)"
        elif cls.requires is Requirement.JUDGE:
            why = (
                f"not in the default set: name it, or list it in {run_defaults.ENV_DEFAULT_METRICS}"
            )
        else:
            why = (
                f"a model metric, run only when named or listed in "
                f"{run_defaults.ENV_DEFAULT_METRICS} (needs the models extra or the GPU job)"
            )
        out.append(f"{cls.name}: {why}")
    return out


def judge_metrics_without_judge(event: RunEvent) -> list[str]:
    """Judge metrics the run asked for while no judge is configured anywhere: each is
    skipped on every case, which a user must hear about before the run, not after."""
    if event.judge is not None:
        return []
    return [
        n for n in event.metrics if registry.resolve(n).uses_judge(event.evaluator_options.get(n))
    ]
