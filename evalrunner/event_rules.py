"""The event's rules that no single field's type can state: the suite key stays under the
suite prefix, the metric selection names known evaluators, thresholds and gates name metrics of
the run inside their ranges, evaluator options fit their evaluator, no number is NaN or
infinite, secrets come only from allowed variables, the network policy holds, the judge (the
event's or the operator's default) is complete, perturbations name known kinds.

:class:`evalrunner.event_schema.EventSpec` runs them in its validator, on the raw event and
whether or not its fields are valid, so that one error lists every problem; what they resolve
(the evaluators, the judge, the options, the perturbations) is kept with the parsed spec as a
:class:`Resolution`.
"""

from __future__ import annotations

import math
import posixpath
import typing
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from evalrunner import network, run_defaults, secrets
from evalrunner.errors import ConfigError, EventError
from evalrunner.evaluators import judge_metrics, registry
from evalrunner.evaluators.base import Evaluator, MetricSpec, Requirement
from evalrunner.evaluators.judge_metrics import JudgeMetric
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.targets import registry as target_registry

SUITE_PREFIX = "test-suites/"
#: The folder under ``SUITE_PREFIX`` a deployed monitor writes each run's suite into and starts
#: itself (``evalrunner.monitor.deployed``): its upload must not start a second run, and a
#: run of a suite there is a monitor run (``evalrunner.signals``).
MONITOR_FOLDER = "_monitor/"
MONITOR_SUITE_PREFIX = f"{SUITE_PREFIX}{MONITOR_FOLDER}"
#: The folder under ``SUITE_PREFIX`` a deployed workflow writes its runs' suites into
#: (``evalrunner.workflow.deployed``) and starts them itself: its uploads start no run.
WORKFLOW_SUITE_PREFIX = f"{SUITE_PREFIX}_workflow/"
SUITE_EXTENSIONS = (".xlsx", ".xlsm", ".csv", ".json", ".jsonl")


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


@dataclass(frozen=True)
class Resolution:
    """What the rules resolved from a valid event."""

    #: Display names of the evaluators that run.
    metrics: list[str] = field(default_factory=list)
    #: False when ``metrics`` is the default selection (the event named none).
    metrics_explicit: bool = True
    #: The event's judge, else the operator's default; None: no judge anywhere.
    judge: dict[str, Any] | None = None
    #: Options by evaluator display name, as the event gave them (each checked).
    evaluator_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: Resolved (intensity and name filled in); empty: no robustness run.
    perturbations: list[PerturbationSpec] = field(default_factory=list)
    #: The plugin modules, each a module name or an absolute .py path (imported).
    plugins: list[str] = field(default_factory=list)
    #: The named judge metrics (each defined in the catalog; their names are in metrics).
    judge_metrics: list[JudgeMetric] = field(default_factory=list)


def check(
    raw: dict[str, Any], suite_prefix: str, defaults: run_defaults.RunDefaults
) -> tuple[list[str], Resolution]:
    """Every rule on ``raw``, in the order users have always read their problems: the
    problems (``field.path: what is wrong``) and what was resolved. ``defaults``: the
    operator's default judge and metrics, as the run's settings read them."""
    problems: list[str] = []
    if isinstance(raw.get("key"), str) and raw["key"]:
        try:
            check_suite_key(raw["key"], suite_prefix)
        except EventError as exc:
            problems.extend(exc.problems)
    judge, judge_from = _judge(raw, defaults, problems)
    plugins, plugin_classes = _plugins(raw.get("plugins"), problems)
    declared, declared_classes = _judge_metrics(raw.get("judge_metrics"), problems)
    names = _selected_metrics(raw)
    before = len(problems)
    classes = _evaluators(names, isinstance(judge, dict), defaults, problems)
    # a selection that did not resolve is reported; the gates and options are not then
    # checked against it (each would only repeat "not a metric of this run" with no names)
    selected = len(problems) == before
    if names is None:  # the default selection, and the metrics of the plugins named
        classes += [c for c in plugin_classes if c not in classes]
    classes += [c for c in declared_classes if c not in classes]  # declared: they run
    problems.extend(non_finite_numbers(raw))
    if selected:
        _gates(raw, classes, problems)
    options = _options(raw.get("evaluator_options"), classes, problems) if selected else {}
    problems.extend(secrets.event_problems(raw))
    problems.extend(network.event_problems(raw))
    if isinstance(judge, dict):
        _judge_config(judge, judge_from, problems)
    perturbations = _perturbations(raw.get("perturbations"), problems)
    return problems, Resolution(
        metrics=[c.name for c in classes],
        metrics_explicit=names is not None,
        judge=judge if isinstance(judge, dict) else None,
        evaluator_options=options,
        perturbations=perturbations,
        plugins=plugins,
        judge_metrics=declared,
    )


def _plugins(value: Any, problems: list[str]) -> tuple[list[str], list[type[Evaluator]]]:
    """Import the event's plugin modules before any metric name is looked up: their
    metrics join the catalog. Each module that fails is a problem naming it."""
    from evalrunner.evaluators import plugins

    if not isinstance(value, list):
        return [], []
    refs: list[str] = []
    classes: list[type[Evaluator]] = []
    for index, item in enumerate(value):
        if not isinstance(item, str):
            continue  # the field's type says so
        try:
            ref = plugins.normalize(item)
            found = plugins.load([ref])
        except ConfigError as exc:
            problems.append(f"plugins[{index}]: {exc.message}")
            continue
        refs.append(ref)
        classes += [c for c in found if c not in classes]
    return refs, classes


def _judge_metrics(
    value: Any, problems: list[str]
) -> tuple[list[JudgeMetric], list[type[Evaluator]]]:
    """Define the event's named judge metrics before any metric name is looked up: each
    joins the catalog under its name. A malformed one is the field's problem (its model
    says so); a name already in use, or declared twice, is a problem here."""
    if not isinstance(value, list):
        return [], []
    metrics: list[JudgeMetric] = []
    for item in value:
        try:
            metrics.append(JudgeMetric.model_validate(item))
        except ValidationError:
            return [], []  # the field's own validation lists what is wrong
    try:
        return metrics, judge_metrics.define_all(metrics)
    except ConfigError as exc:
        problems.append(f"judge_metrics: {exc.message}")
        return [], []


def _evaluators(
    names: list[str] | None,
    with_judge: bool,
    defaults: run_defaults.RunDefaults,
    problems: list[str],
) -> list[type[Evaluator]]:
    """The evaluators the event names (``metrics``, the legacy ``target.metric``), else the
    default selection."""
    if names is None:
        return _default_classes(with_judge, defaults, problems)
    try:
        return registry.resolve_all(names)
    except ConfigError as exc:
        problems.extend(f"metric: {line}" for line in exc.message.splitlines())
        return []


def _gates(raw: dict[str, Any], classes: list[type[Evaluator]], problems: list[str]) -> None:
    """``thresholds`` and ``fail_under`` name metrics of this run, inside their ranges."""
    known = list(dict.fromkeys([*(c.name for c in classes), *registry.metric_names(classes)]))
    for name in ("thresholds", "fail_under"):
        value = raw.get(name)
        if not isinstance(value, dict):
            continue
        for metric, number in value.items():
            if metric not in known:
                problems.append(
                    f"{name}.{metric}: not a metric of this run; valid names: {', '.join(known)}"
                )
                continue
            spec = registry.gated_metric(classes, metric)
            problem = out_of_range(f"{name}.{metric}", number, spec)
            if problem:
                problems.append(problem)


def _options(
    options: Any, classes: list[type[Evaluator]], problems: list[str]
) -> dict[str, dict[str, Any]]:
    """``evaluator_options`` by evaluator display name, each checked by its evaluator's
    options model."""
    resolved: dict[str, dict[str, Any]] = {}
    if not isinstance(options, dict):
        return resolved
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
            problems.extend(pydantic_problems(exc, f"evaluator_options.{name}", cls.options_model))
            continue
        resolved[cls.name] = value
    return resolved


def _judge_config(judge: dict[str, Any], judge_from: str, problems: list[str]) -> None:
    """The judge is a complete :class:`~evalrunner.judge.config.JudgeConfig`."""
    from evalrunner.judge.config import JudgeConfig

    try:
        JudgeConfig.model_validate(judge)
    except ValidationError as exc:
        found = pydantic_problems(exc, "judge", JudgeConfig)
        # the event's own judge is named by the path; a default one by where it is set
        problems.extend(
            found if judge_from == "the event" else (f"{p} (from {judge_from})" for p in found)
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


def pydantic_problems(
    exc: ValidationError, prefix: str = "", model: type[BaseModel] | None = None
) -> list[str]:
    """pydantic's errors in the project's style, one line each: ``field.path: what is
    wrong``. A target's kind tag (the union's branch, first in the location after
    ``target``) is dropped: users wrote ``target.timeout_seconds``, not
    ``target.agentId.timeout_seconds``. Given the ``model`` that raised them, an unknown key
    is answered with the valid keys at its level (as a target's is), not pydantic's bare
    "Extra inputs are not permitted"."""
    kinds = target_registry.available()
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if prefix == "" and loc[:1] == ["target"] and len(loc) > 1 and loc[1] in kinds:
            del loc[1]
        where = ".".join(p for p in (prefix, *loc) if p) or "event"
        valid = keys_at(model, err["loc"][:-1]) if model is not None else []
        if err["type"] == "extra_forbidden" and valid:
            lines.append(f"{where}: unknown key; valid keys here: {', '.join(valid)}")
        else:
            lines.append(f"{where}: {err['msg']}")
    return lines


def keys_at(root: type[BaseModel], path: typing.Sequence[Any]) -> list[str]:
    """The keys (as written: aliases) that the model at ``path`` below ``root`` accepts,
    through optional fields and lists of models; [] where no model is found there."""
    model: type[BaseModel] | None = root
    for part in path:
        if isinstance(part, int):
            continue  # an item of a list of models
        field = model.model_fields.get(part) if model is not None else None
        if field is None:
            return []
        model = _model_in(field.annotation)
    return [f.alias or n for n, f in model.model_fields.items()] if model is not None else []


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``Options | None``, ``list[Options]`` -> Options), or None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


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


def _judge(
    raw: dict[str, Any], defaults: run_defaults.RunDefaults, problems: list[str]
) -> tuple[Any, str]:
    """The event's judge, else the operator's default (:mod:`evalrunner.run_defaults`), and
    where it came from (for messages)."""
    if "judge" in raw:
        return raw["judge"], "the event"
    try:
        found = defaults.default_judge()
    except ConfigError as exc:
        problems.append(f"judge: {exc.message}")
        return None, ""
    return found if found is not None else (None, "")


def _default_classes(
    with_judge: bool, defaults: run_defaults.RunDefaults, problems: list[str]
) -> list[type[Evaluator]]:
    """The evaluators of a run that names no metric: the cheap CPU checks, plus the
    operator's default metrics (cdk.json / EVALRUNNER_DEFAULT_METRICS) when configured, else
    the five RAG judge metrics when there is a judge. Judge metrics are left out without a
    judge (:func:`left_out_by_default` says so)."""
    try:
        configured = defaults.default_metrics()
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
