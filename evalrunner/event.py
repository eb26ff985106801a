"""The run event: the JSON contract shared by the CLI, the upload trigger, schedules and the
state machine. Defined by :class:`evalrunner.event_schema.EventSpec` and the target kinds'
spec models, validated by them (their errors worded as the JSON Schema generated from them
says, :mod:`evalrunner.event_messages`), then checked for what a schema cannot say (suite key
safety, metric names and ranges, evaluator options, allowed secrets, the network policy)."""

from __future__ import annotations

import copy
import json
import math
import os
import posixpath
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner import network, redaction, run_defaults, secrets
from evalrunner.errors import ConfigError, EventError
from evalrunner.evaluators import registry
from evalrunner.evaluators.base import Evaluator, MetricSpec, Requirement
from evalrunner.event_messages import event_problems
from evalrunner.event_schema import EventSpec
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.reports.verdict import DEFAULT_MAX_ERROR_SHARE, FailOn, VerdictPolicy
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS
from evalrunner.targets import registry as target_registry
from evalrunner.targets.spec import TargetSpec

SUITE_PREFIX = "test-suites/"
SUITE_EXTENSIONS = (".xlsx", ".xlsm", ".csv", ".json")

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


def check_suite_key(key: str, prefix: str = SUITE_PREFIX) -> str:
    """Refuse keys that would read outside the suite prefix of the bucket."""
    if key.startswith("/") or "\\" in key:
        raise EventError(f"key: {key!r} must be a relative S3 key like '{prefix}my-suite.xlsx'")
    if ".." in key.split("/") or posixpath.normpath(key) != key:
        raise EventError(f"key: {key!r} must not contain '..', '.' or empty path segments")
    if not key.startswith(prefix):
        raise EventError(f"key: {key!r} must be under '{prefix}', e.g. '{prefix}my-suite.xlsx'")
    if not key.lower().endswith(SUITE_EXTENSIONS):
        raise EventError(f"key: {key!r} must end with one of {', '.join(SUITE_EXTENSIONS)}")
    return key


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
    problems: list[str] = []
    typed: EventSpec | None = None
    try:
        typed = EventSpec.model_validate(raw)
    except ValidationError as exc:
        kinds = {k: c.spec_model for k, c in target_registry.available().items()}
        problems.extend(event_problems(exc, kinds))

    if isinstance(raw.get("key"), str) and raw["key"]:
        try:
            check_suite_key(raw["key"], suite_prefix)
        except EventError as exc:
            problems.extend(exc.problems)

    judge, judge_from = _judge(raw, problems)
    names = _selected_metrics(raw)
    classes = []
    if names is not None:
        try:
            classes = registry.resolve_all(names)
        except ConfigError as exc:
            problems.extend(f"metric: {line}" for line in exc.message.splitlines())
    else:
        classes = _default_classes(isinstance(judge, dict), problems)

    problems.extend(non_finite_numbers(raw))
    known = list(dict.fromkeys([*(c.name for c in classes), *registry.metric_names(classes)]))
    for field in ("thresholds", "fail_under"):
        value = raw.get(field)
        if isinstance(value, dict):
            for metric, number in value.items():
                if metric not in known:
                    problems.append(
                        f"{field}.{metric}: not a metric of this run; valid names: "
                        f"{', '.join(known)}"
                    )
                    continue
                spec = registry.gated_metric(classes, metric)
                problem = out_of_range(f"{field}.{metric}", number, spec)
                if problem:
                    problems.append(problem)
    options = raw.get("evaluator_options")
    resolved_options: dict[str, dict[str, Any]] = {}
    if isinstance(options, dict):
        by_name = {registry._key(c.name): c for c in classes}
        for name, value in options.items():
            cls = by_name.get(registry._key(name))
            if cls is None:
                problems.append(
                    f"evaluator_options.{name}: not an evaluator of this run; selected: "
                    f"{', '.join(c.name for c in classes)}"
                )
                continue
            try:
                cls.options_model.model_validate(value)
            except ValidationError as exc:
                problems.extend(pydantic_problems(exc, f"evaluator_options.{name}"))
                continue
            resolved_options[cls.name] = value
    problems.extend(secrets.event_problems(raw))
    problems.extend(network.event_problems(raw))
    if isinstance(judge, dict):
        from evalrunner.judge.config import JudgeConfig

        try:
            JudgeConfig.model_validate(judge)
        except ValidationError as exc:
            found = pydantic_problems(exc, "judge")
            # the event's own judge is named by the path; a default one by where it is set
            problems.extend(
                found if judge_from == "the event" else (f"{p} (from {judge_from})" for p in found)
            )
    perturbations = _perturbations(raw.get("perturbations"), problems)
    if problems or typed is None:
        raise EventError(problems)

    target = raw["target"]
    concurrency, requested_concurrency = _capped_concurrency(
        raw.get("max_concurrency", DEFAULT_MAX_CONCURRENCY)
    )
    return RunEvent(
        key=raw["key"],
        iterations=raw["iterations"],
        target=target,
        target_spec=typed.target,
        metrics=[c.name for c in classes],
        metrics_explicit=names is not None,
        thresholds=raw.get("thresholds", {}),
        fail_under=raw.get("fail_under", {}),
        evaluator_options=resolved_options,
        baseline=raw.get("baseline"),
        policy=VerdictPolicy(
            fail_on=raw.get("fail_on") or FailOn.FAILURES,
            fail_on_regression=bool(raw.get("fail_on_regression")),
            max_error_share=raw.get("max_error_share", DEFAULT_MAX_ERROR_SHARE),
        ),
        judge=judge if isinstance(judge, dict) else None,
        max_concurrency=concurrency,
        max_concurrency_requested=requested_concurrency,
        cases_per_task=raw.get("cases_per_task"),
        tolerated_failure_percentage=raw.get(
            "tolerated_failure_percentage", DEFAULT_TOLERATED_FAILURE_PERCENTAGE
        ),
        scoring=raw.get("scoring", "auto"),
        run_id=raw.get("run_id"),
        max_text_chars=raw.get("max_text_chars", DEFAULT_MAX_TEXT_CHARS),
        perturbations=perturbations,
    )


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


def _perturbations(value: Any, problems: list[str]) -> list[PerturbationSpec]:
    """The event's perturbations resolved (kind known, names unique), or [] with the
    problems added; the schema has already reported a malformed entry."""
    from evalrunner.perturb.registry import resolve

    if not isinstance(value, list):
        return []
    try:
        specs = [PerturbationSpec.model_validate(v) for v in value]
    except ValidationError:
        return []  # reported by the schema
    try:
        return resolve(specs)
    except EventError as exc:
        problems.extend(exc.problems)
        return []


def pydantic_problems(exc: ValidationError, prefix: str = "") -> list[str]:
    """pydantic's errors in the project's style, one line each: ``field.path: what is
    wrong``. A target's kind tag (the union's branch, first in the location after
    ``target``) is dropped: users wrote ``target.timeout_seconds``, not
    ``target.agentId.timeout_seconds``."""
    kinds = target_registry.available()
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if prefix == "" and loc[:1] == ["target"] and len(loc) > 1 and loc[1] in kinds:
            del loc[1]
        where = ".".join(p for p in (prefix, *loc) if p) or "event"
        lines.append(f"{where}: {err['msg']}")
    return lines


def non_finite_numbers(value: Any, where: str = "event") -> list[str]:
    """Every NaN, Infinity and -Infinity in a raw event, by field. Python's JSON reader
    accepts them, but no threshold, gate or setting means anything with one, and a NaN that
    got through would make summary.json invalid JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return [
            f"{where}: {value} is not a finite number; write a plain number such as 0.5 "
            "(NaN, Infinity and -Infinity are not allowed)"
        ]
    if isinstance(value, dict):
        prefix = "" if where == "event" else f"{where}."
        return [p for k, v in value.items() for p in non_finite_numbers(v, f"{prefix}{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in non_finite_numbers(v, f"{where}[{i}]")]
    return []


def out_of_range(field: str, number: Any, spec: MetricSpec | None) -> str | None:
    """Why a threshold or gate value cannot apply to its metric, or None when it can: it
    must be a finite number inside the range the metric declares."""
    if isinstance(number, bool) or not isinstance(number, int | float):
        return None  # the schema reports the type
    if not math.isfinite(number) or spec is None:
        return None  # reported by non_finite_numbers / the name check
    if spec.low <= number <= spec.high:
        return None
    if math.isinf(spec.high):
        valid = f"at least {spec.low:g}"
    else:
        valid = f"between {spec.low:g} and {spec.high:g}"
    return f"{field}: {number:g} is outside the range of {spec.name}; give a value {valid}"


def _judge(raw: dict[str, Any], problems: list[str]) -> tuple[Any, str]:
    """The event's judge, else the operator's default (:mod:`evalrunner.run_defaults`), and
    where it came from (for messages)."""
    if "judge" in raw:
        return raw["judge"], "the event"
    try:
        found = run_defaults.default_judge()
    except ConfigError as exc:
        problems.append(f"judge: {exc.message}")
        return None, ""
    return found if found is not None else (None, "")


def _default_classes(with_judge: bool, problems: list[str]) -> list[type[Evaluator]]:
    """The evaluators of a run that names no metric: the cheap CPU checks, plus the
    operator's default metrics (cdk.json / EVALRUNNER_DEFAULT_METRICS) when configured, else
    the five RAG judge metrics when there is a judge. Judge metrics are left out without a
    judge (:func:`left_out_by_default` says so)."""
    try:
        configured = run_defaults.default_metrics()
        extra = registry.resolve_all(configured or [])
    except ConfigError as exc:
        problems.extend(f"default metrics: {line}" for line in exc.message.splitlines())
        configured, extra = None, []
    names = registry.default_names(with_judge=with_judge and configured is None)
    classes = [registry.resolve(n) for n in names]
    for cls in extra:
        if cls not in classes and (with_judge or cls.requires is not Requirement.JUDGE):
            classes.append(cls)
    return classes


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


def _selected_metrics(raw: dict[str, Any]) -> list[str] | None:
    names: list[str] = []
    target = raw.get("target")
    legacy = target.get("metric") if isinstance(target, dict) else None
    for value in (legacy, raw.get("metrics")):
        if isinstance(value, str):
            names.append(value)
        elif isinstance(value, list):
            names.extend(v for v in value if isinstance(v, str))
    return names or None
