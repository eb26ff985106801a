"""The run event: the JSON contract shared by the CLI, the upload trigger, schedules and the
state machine. Defined by :class:`evalrunner.event_schema.EventSpec` and the target kinds'
spec models, validated by them (their errors worded as the JSON Schema generated from them
says, :mod:`evalrunner.event_messages`), then checked for what a schema cannot say (suite key
safety, metric names and ranges, evaluator options, allowed secrets, the network policy)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrunner import redaction, run_defaults
from evalrunner.errors import ConfigError, EventError
from evalrunner.evaluators import registry
from evalrunner.evaluators.base import Requirement
from evalrunner.evaluators.judge_metrics import JudgeMetric
from evalrunner.event_messages import event_problems
from evalrunner.event_rules import SUITE_EXTENSIONS as SUITE_EXTENSIONS
from evalrunner.event_rules import SUITE_PREFIX as SUITE_PREFIX
from evalrunner.event_rules import pydantic_problems as pydantic_problems
from evalrunner.event_schema import EventSpec
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.reports.verdict import DEFAULT_MAX_ERROR_SHARE, FailOn, VerdictPolicy
from evalrunner.targets import registry as target_registry
from evalrunner.targets.spec import TargetSpec

DEFAULT_MAX_CONCURRENCY = 10
#: The deployment's reserved concurrency of the case runner (cdk.json
#: ``case_runner_reserved_concurrency``, set on the functions by the stack): an event's
#: ``max_concurrency`` above it is capped to it. More tasks at once than the function may run
#: would only be throttled (TooManyRequestsException) and retried.
ENV_CONCURRENCY_CAP = "EVALRUNNER_MAX_CONCURRENCY"


class RunEvent(BaseModel):
    """A validated event, resolved for the run: the parsed :class:`EventSpec` (``spec``;
    every field of the event is read from it) plus what a run needs beyond the event as
    written: the evaluator selection (``metrics``, display names; Prepare may settle it
    against the suite), the judge (the event's or the operator's default), the checked
    evaluator options and perturbations, and ``max_concurrency`` under the deployment's cap.
    Built by :meth:`from_spec`; nothing here redefines a field of the event."""

    model_config = ConfigDict(extra="forbid")

    spec: EventSpec
    #: The target object as the event gave it: what the manifest carries to each case.
    target: dict[str, Any]
    metrics: list[str]
    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    #: What the event asked for when it was more than the deployment allows (then
    #: ``max_concurrency`` is the cap): :func:`concurrency_notice` says so.
    max_concurrency_requested: int | None = None

    @classmethod
    def from_spec(cls, spec: EventSpec, *, concurrency_cap: int | None = None) -> RunEvent:
        """The run ``spec`` describes, ``concurrency_cap`` (the deployment's, read once into
        the run's settings: :func:`concurrency_cap`) applied; ``target``: the target object
        as the event gave it (:meth:`TargetSpec.as_written`)."""
        concurrency, requested = _capped_concurrency(spec.max_concurrency, concurrency_cap)
        return cls(
            spec=spec,
            target=spec.target.as_written(),
            metrics=spec.resolution.metrics,
            max_concurrency=concurrency,
            max_concurrency_requested=requested,
        )

    @property
    def target_kind(self) -> str:
        return target_registry.detect_kind(self.target)

    @property
    def target_spec(self) -> TargetSpec:
        """The target, typed: the kind's own spec model (BedrockAgentSpec, HttpSpec, ...)."""
        return self.spec.target

    @property
    def key(self) -> str:
        return self.spec.key

    @property
    def iterations(self) -> int:
        return self.spec.iterations

    @property
    def metrics_explicit(self) -> bool:
        """False when ``metrics`` is the default selection (the event named none)."""
        return self.spec.resolution.metrics_explicit

    @property
    def plugins(self) -> list[str]:
        """The plugin modules of the run's own metrics (module names, absolute .py paths)."""
        return self.spec.resolution.plugins

    @property
    def judge_metrics(self) -> list[JudgeMetric]:
        """The run's named judge metrics (GEval and BYOP declarations), defined."""
        return self.spec.resolution.judge_metrics

    @property
    def thresholds(self) -> dict[str, float]:
        return self.spec.thresholds or {}

    @property
    def fail_under(self) -> dict[str, float]:
        return self.spec.fail_under or {}

    @property
    def evaluator_options(self) -> dict[str, dict[str, Any]]:
        """Options by evaluator display name, each checked by its evaluator."""
        return self.spec.resolution.evaluator_options

    @property
    def baseline(self) -> str | None:
        return self.spec.baseline

    @property
    def policy(self) -> VerdictPolicy:
        """What fails the run (``fail_on``, ``fail_on_regression``, ``max_error_share``)."""
        spec = self.spec
        share = spec.max_error_share
        return VerdictPolicy(
            fail_on=FailOn(spec.fail_on or FailOn.FAILURES),
            fail_on_regression=bool(spec.fail_on_regression),
            max_error_share=DEFAULT_MAX_ERROR_SHARE if share is None else share,
        )

    @property
    def judge(self) -> dict[str, Any] | None:
        """The event's judge, else the operator's default; None: no judge anywhere."""
        return self.spec.resolution.judge

    @property
    def cases_per_task(self) -> int | None:
        """None: Prepare chooses from the run's size (:mod:`evalrunner.pipeline.batching`)."""
        return self.spec.cases_per_task

    @property
    def tolerated_failure_percentage(self) -> float:
        return self.spec.tolerated_failure_percentage

    @property
    def scoring(self) -> Literal["auto", "cpu"]:
        """ "cpu": never the GPU Batch job, the Score Lambda scores in-process."""
        return self.spec.scoring

    @property
    def run_id(self) -> str | None:
        return self.spec.run_id

    @property
    def max_text_chars(self) -> int:
        return self.spec.max_text_chars

    @property
    def perturbations(self) -> list[PerturbationSpec]:
        """Resolved (intensity and name filled in); empty: no robustness run."""
        return self.spec.resolution.perturbations


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


def parse_event(
    raw: Any,
    *,
    suite_prefix: str = SUITE_PREFIX,
    concurrency_cap: int | None = None,
    defaults: run_defaults.RunDefaults | None = None,
) -> RunEvent:
    """Validate a raw event and return it resolved; every problem is reported in one error.
    ``concurrency_cap``: the deployment's cap on ``max_concurrency`` (None: none);
    ``defaults``: as for :func:`read_event`."""
    return RunEvent.from_spec(
        read_event(raw, suite_prefix=suite_prefix, defaults=defaults),
        concurrency_cap=concurrency_cap,
    )


def read_event(
    raw: Any,
    *,
    suite_prefix: str = SUITE_PREFIX,
    defaults: run_defaults.RunDefaults | None = None,
) -> EventSpec:
    """A raw event (JSON text or its object) as an :class:`EventSpec`: what a step takes at
    its door (the Prepare handler; :func:`parse_event` resolves it further for the CLI and
    the checks). Its secrets are registered for masking before anything can log or echo it,
    and every problem is reported in one :class:`EventError`, in the JSON Schema's words.
    ``defaults``: the operator's default judge, metrics and profile for an event that names
    none, as the run's :class:`~evalrunner.pipeline.context.Settings` read them; None: read
    from this process's environment now (the CLI's checks, one event per command)."""
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise EventError(f"event: not valid JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise EventError(f"event: must be a JSON object, got {type(raw).__name__}")

    redaction.register_event(raw)  # before anything can log or echo it
    try:
        defaults = run_defaults.RunDefaults.read() if defaults is None else defaults
        spec = EventSpec.model_validate(
            raw, context={"suite_prefix": suite_prefix, "defaults": defaults}
        )
    except ValidationError as exc:
        kinds = {k: c.spec_model for k, c in target_registry.available().items()}
        raise EventError(event_problems(exc, kinds)) from None
    return spec


def concurrency_cap(environ: Mapping[str, str] | None = None) -> int | None:
    """The deployment's cap on ``max_concurrency`` (:data:`ENV_CONCURRENCY_CAP` in
    ``environ``, default: this process's environment), or None. Read once per process: into
    the run's :class:`~evalrunner.pipeline.context.Settings`, or by the CLI for its
    warnings."""
    env = os.environ if environ is None else environ
    value = env.get(ENV_CONCURRENCY_CAP, "").strip()
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


def _capped_concurrency(requested: int, cap: int | None) -> tuple[int, int | None]:
    """(max_concurrency to run with, what the event asked for when it was capped)."""
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


def left_out_by_default(
    event: RunEvent, defaults: run_defaults.RunDefaults | None = None
) -> list[str]:
    """What a run that named no metric left out of the seed runner's default set (or of the
    operator's, when configured), and why: so a local run without models or judge says what
    it did not measure instead of looking complete. ``defaults``: the operator's, as read
    for the run (None: read from this process's environment now)."""
    if event.metrics_explicit:
        return []
    defaults = run_defaults.RunDefaults.read() if defaults is None else defaults
    try:
        wanted = defaults.default_metrics() or list(run_defaults.SEED_DEFAULT_METRICS)
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
