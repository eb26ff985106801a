"""The event's JSON Schema, generated from the models that define the event.

The top level comes from :class:`EventSpec`, each target kind from the spec model its class
registers (:mod:`evalrunner.targets.registry`): a field is written once, as a pydantic field,
and the shipped ``schemas/event.schema.json`` is this module's output (a test keeps the two
equal; ``python -m evalrunner.event_schema`` rewrites the file). The schema is for users and
docs; events are validated by the models themselves, their errors worded as the schema's
(:mod:`evalrunner.event_messages`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError

from evalrunner import event_rules, profiles
from evalrunner.errors import ConfigError
from evalrunner.evaluators.judge_metrics import JudgeMetric
from evalrunner.perturb.spec import PerturbationSpec
from evalrunner.redteam import event as redteam_event
from evalrunner.redteam.spec import RedTeamSpec
from evalrunner.run_defaults import RunDefaults
from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS
from evalrunner.targets.registry import available, parse_spec
from evalrunner.targets.spec import JsonInt, SpecModel, TargetSpec, integral

SHIPPED = Path(__file__).parent / "schemas" / "event.schema.json"
RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
MetricName = Annotated[str, Field(min_length=1)]
#: A JSON object whose content another model checks (evaluator options, the judge).
AnyObject = Annotated[dict[str, Any], WithJsonSchema({"type": "object"})]


# A perturbation as an event gives it: strict like every other part of the event (no
# string-to-number coercion, no null for a field left unset); its fields are PerturbationSpec's.
class EventPerturbation(PerturbationSpec, SpecModel):
    """One perturbation of a run: a kind, how much of the text it touches, and its seed."""


# The red team as an event gives it: strict like every other part of the event; its fields
# are RedTeamSpec's (the one definition evalrunner redteam's options share).
class EventRedTeam(RedTeamSpec, SpecModel):
    """A red team run by the pipeline: attacks written by the run's judge in Prepare."""

    # names as the schema says: a list of names (no "a,b" option values, as the CLI takes)
    @field_validator("plugins", mode="before")
    @classmethod
    def _plugin_names(cls, value: object) -> object:
        return value

    @field_validator("strategies", mode="before")
    @classmethod
    def _strategy_names(cls, value: object) -> object:
        return value


class EventSpec(SpecModel):
    """Starts one evaluation run: the suite to read, how often to repeat it, and the target to
    call. Compatible with the original test-runner events ({key, iterations, target}); other
    fields are extensions."""

    key: str = Field(
        min_length=1,
        description="S3 key of the suite (.xlsx, .csv or .json) in the runner bucket, under "
        "test-suites/. No '..' segments, no leading '/'.",
    )
    iterations: JsonInt = Field(
        ge=1, le=100, description="How many times every case is run. Required: there is no default."
    )
    #: The kind's own spec model (BedrockAgentSpec, ...): one discriminated union of the
    #: registered kinds, told apart by the kind key present.
    target: Annotated[TargetSpec, BeforeValidator(parse_spec), WithJsonSchema({"x-ref": "target"})]
    metrics: list[MetricName] | None = Field(
        default=None,
        min_length=1,
        description="Evaluators to run, by display name. Same as target.metric; when neither "
        "is given, every evaluator that needs no model and no judge runs.",
    )
    profile: str | None = Field(
        default=None,
        description='A named set of metrics and thresholds, e.g. "seed-003" (the seed test '
        "runner's nine metrics at DeepEval's default threshold 0.5). Metrics the event names "
        "are added to the profile's; its own thresholds win.",
    )
    thresholds: dict[str, float] | None = Field(
        default=None,
        description="Success threshold per metric name (or per evaluator name, meaning its "
        'primary metric), e.g. {"ROUGE-L": 0.4}.',
    )
    fail_under: dict[str, float] | None = Field(
        default=None,
        description="Gates: the run fails when the average score of a metric (or an "
        'evaluator\'s primary metric) is below the value, e.g. {"Rouge Metric": 0.3}.',
    )
    fail_on: Literal["failures", "regressions", "errors", "never"] | None = Field(
        default=None,
        description="What fails the run (exit 1): 'failures' (the default: a case scored "
        "below a primary metric's threshold, a failed target call, or a fail_under gate), "
        "'regressions' (a regression against the baseline, or a gate), 'errors' (only "
        "gates), 'never'. Too many errors (max_error_share) make the run not measured (exit "
        "4) under all but 'never'.",
    )
    fail_on_regression: bool | None = Field(
        default=None,
        description="A regression against the baseline fails the run too, whatever fail_on "
        "says (the CLI's --fail-on-regression).",
    )
    max_error_share: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="Share of the target calls, or of a metric's cases, that may error before "
        "the run is not measured (exit 4), never a pass; default 0.1.",
    )
    baseline: str | None = Field(
        default=None,
        pattern=RUN_ID_PATTERN,
        description="Run id to compare with; default: the previous run of the same target "
        "and suite.",
    )
    rescored_from: str | None = Field(
        default=None,
        pattern=RUN_ID_PATTERN,
        description="Run id whose stored answers this run scores again (set by "
        "'evalrunner rescore'); shown in the reports and summary.json as the link to it.",
    )
    evaluator_options: dict[str, AnyObject] | None = Field(
        default=None,
        description='Run-wide settings per evaluator, by display name, e.g. {"JSON schema": '
        '{"schema": {"type": "object"}}}. \'evalrunner metrics\' lists what each evaluator '
        "accepts.",
    )
    judge: AnyObject | None = Field(
        default=None,
        description='The LLM judge for judge metrics: {"openai": {"base_url", "model", '
        '"api_key_env" or "api_key_secret"}} or {"bedrock": {"model_id", "region"}}, '
        "plus timeout_seconds, max_retries, max_concurrency, cache, cache_dir. Without it, "
        "judge metrics are skipped with a reason.",
    )
    max_concurrency: JsonInt = Field(
        default=10, ge=1, le=1000, description="Test cases run at once by the Distributed Map."
    )
    # the bounds on the integer itself: on the optional field they would not reach the schema
    cases_per_task: Annotated[int, Field(ge=1, le=1000), integral] | None = Field(
        default=None,
        description="Test cases (x iterations) one Map task runs, one after another. Each task "
        "costs a Lambda invoke and state transitions whatever it holds, so large runs are "
        "cheaper and faster with many; default: chosen from the run's size (1 until there are "
        "8 cases per concurrent task, at most 100). A task near Lambda's time limit hands the "
        "cases it has not started to a new task.",
    )
    scoring: Literal["auto", "cpu"] = Field(
        default="auto",
        description='Where model metrics are scored: "auto" (a deployment with GPU scoring '
        'sends large runs to its AWS Batch job) or "cpu" (always the Score Lambda, in-process; '
        "use it when the account has no GPU instance quota).",
    )
    tolerated_failure_percentage: float = Field(
        default=100,
        ge=0,
        le=100,
        description="Share of case tasks that may fail outright before the Map stops. Failed "
        "cases are reported either way.",
    )
    max_text_chars: JsonInt = Field(
        default=DEFAULT_MAX_TEXT_CHARS,
        ge=1000,
        le=10_000_000,
        description="Characters of each text (the answer, each context, the expected answer, "
        "...) that evaluators examine; longer texts are cut and the case is marked truncated "
        "with a note. Bounds the time and memory a huge answer can cost.",
    )
    run_id: str | None = Field(
        default=None,
        pattern=RUN_ID_PATTERN,
        description="Identifier of the run's intermediates under runs/; generated when absent.",
    )

    perturbations: list[EventPerturbation] | None = Field(
        default=None,
        max_length=20,
        description="Robustness: run every case again under each perturbation (typos, ocr, "
        'synonym, ...), e.g. [{"kind": "typos", "intensity": 0.1, "seed": 7}], and report '
        "the cases whose verdict flipped. 'evalrunner perturbations' lists the kinds.",
    )
    plugins: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        max_length=50,
        description="Modules of your own metrics (@evalrunner.metric functions, Evaluator "
        "subclasses), each an importable module name or a .py file path. Every step imports "
        "them, so their metrics can be named in metrics, thresholds and fail_under; when the "
        "event names no metric, theirs run besides the default selection.",
    )

    judge_metrics: list[JudgeMetric] | None = Field(
        default=None,
        max_length=50,
        description="Named judge metrics, as many as needed: each a GEval (criteria or "
        "evaluation_steps, the case fields it sees in evaluation_params) or a BYOP (a yes/no "
        'prompt), e.g. [{"kind": "geval", "name": "Politeness", "criteria": "Is the answer '
        'polite?", "evaluation_params": ["input", "actual_output"], "threshold": 0.7}]. Each '
        "is a metric of its own: a column, a result row, a name thresholds and fail_under "
        "accept; they run besides the selected metrics.",
    )

    redteam: EventRedTeam | None = Field(
        default=None,
        description="Red-team the target: Prepare has the run's judge write attacks against "
        "the purpose (num_tests per plugin, plus a copy per strategy), stores them beside the "
        "runs (runs/redteam/, reused by a rerun of the same event) and the run grades them with "
        "the 'Red team' grader (gate 'Attack resisted' >= 1.0 unless fail_under says "
        'otherwise), e.g. {"purpose": "an HR assistant", "plugins": ["prompt-injection"], '
        '"strategies": ["base64"], "num_tests": 3, "seed": 7}. The suite at key gives the '
        "purpose when none is stated; its cases are not run.",
    )

    @field_validator("target", mode="before")
    @classmethod
    def _one_kind(cls, value: Any) -> Any:
        return one_target_kind(value)

    #: What the cross-field rules resolved (set by :meth:`_rules` on every parsed spec).
    _resolution: event_rules.Resolution = PrivateAttr(default_factory=event_rules.Resolution)

    @property
    def resolution(self) -> event_rules.Resolution:
        """The evaluators, judge, options and perturbations this event resolves to."""
        return self._resolution

    @model_validator(mode="wrap")
    @classmethod
    def _rules(
        cls, data: Any, handler: ModelWrapValidatorHandler[EventSpec], info: ValidationInfo
    ) -> EventSpec:
        """The rules no field's type can state (:mod:`evalrunner.event_rules`). They run on
        the raw event whether or not its fields are valid, so that one error lists every
        problem; each is a ``event_rule`` error whose ``reason`` is the whole line.
        ``context={"suite_prefix": ...}`` moves the prefix suite keys must be under;
        ``context={"defaults": RunDefaults}`` gives the operator's defaults as the run's
        settings read them (none given: read from this process's environment now)."""
        if not isinstance(data, dict):
            return handler(data)
        context = info.context or {}
        prefix = context.get("suite_prefix", event_rules.SUITE_PREFIX)
        defaults = context.get("defaults")
        if not isinstance(defaults, RunDefaults):
            defaults = RunDefaults.read()
        data, problems = redteam_event.expand(data, _judge_of(data, defaults))
        data, profile_problems = profiles.expand(data, defaults)
        problems += profile_problems
        found_problems, resolution = event_rules.check(data, prefix, defaults)
        problems += found_problems
        found: list[InitErrorDetails] = []
        try:
            spec = handler(data)
        except ValidationError as exc:
            if not problems:
                raise
            found = [_again(e) for e in exc.errors()]
        if problems:
            found += [_rule_error(p, data) for p in problems]
            raise ValidationError.from_exception_data(cls.__name__, found)
        spec._resolution = resolution
        return spec


def _judge_of(data: dict[str, Any], defaults: RunDefaults) -> Any:
    """The event's judge object, else the operator's default (None: none, or a default that
    is broken: the judge's own rule says so)."""
    if "judge" in data:
        return data["judge"]
    try:
        found = defaults.default_judge()
    except ConfigError:
        return None
    return found[0] if found is not None else None


def one_target_kind(value: Any) -> Any:
    """A target names exactly one registered kind; said before the kind's own model runs, so
    that a user hears which kind is missing, not every kind's complaints. Shared by the event
    and the project file's targets (:mod:`evalrunner.project.model`)."""
    if not isinstance(value, dict):
        raise PydanticCustomError(
            "target_kind", "must be an object, got {got}", {"got": type(value).__name__}
        )
    registered = available()
    kinds = [k for k in registered if k in value]
    if not kinds:
        valid = ", ".join("+".join((k, *c.companions)) for k, c in registered.items())
        raise PydanticCustomError(
            "target_kind", "no target kind given; use exactly one of {valid}", {"valid": valid}
        )
    if len(kinds) > 1:
        raise PydanticCustomError(
            "target_kind",
            "give exactly one target kind, found {found}",
            {"found": " and ".join(kinds)},
        )
    return value


def _rule_error(problem: str, data: Any) -> InitErrorDetails:
    return InitErrorDetails(
        type=PydanticCustomError("event_rule", "{reason}", {"reason": problem}),
        loc=(),
        input=data,
    )


def _again(error: ErrorDetails) -> InitErrorDetails:
    """A field's error as it was, to raise with the rules' own."""
    return InitErrorDetails(
        type=PydanticCustomError(error["type"], error["msg"], error.get("ctx")),
        loc=error["loc"],
        input=error["input"],
    )


METRIC_SELECTION: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "minLength": 1},
        {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    ]
}


def _clean(node: Any, defs: dict[str, Any]) -> Any:
    """pydantic's field schema in the shape JSON Schema users read: no titles, an optional
    field is just its type (absent means unset; null was never accepted), nested models
    inlined."""
    if isinstance(node, list):
        return [_clean(n, defs) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: v for k, v in node.items() if k != "title"}
    if "x-ref" in node:  # a reference to the event's own $defs (pydantic cannot hold one)
        node["$ref"] = f"#/$defs/{node.pop('x-ref')}"
        node.pop("default", None)
        return node
    ref = node.get("$ref", "")
    if ref.startswith("#/$defs/") and ref[8:] in defs:
        node = {**_clean(defs[ref[8:]], defs), **{k: v for k, v in node.items() if k != "$ref"}}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options and len(options) == 2:
        (other,) = [o for o in options if o != {"type": "null"}]
        node = {**{k: v for k, v in node.items() if k != "anyOf"}, **other}
        if "$ref" in other:  # an optional model: inlined like any other
            return _clean(node, defs)
    if node.get("default", 0) is None:
        del node["default"]
    ordered = sorted(node, key=lambda k: _KEY_ORDER.index(k) if k in _KEY_ORDER else 99)
    return {k: _clean(node[k], defs) if k != "default" else node[k] for k in ordered}


#: Keys in the order a reader wants them: what it is, its bounds, then the prose.
_KEY_ORDER = (
    "$ref",
    "type",
    "required",
    "additionalProperties",
    "enum",
    "minLength",
    "pattern",
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "minItems",
    "items",
    "properties",
    "default",
    "description",
)


def _object(model: type[BaseModel], own: bool) -> dict[str, Any]:
    """The model's fields as a schema object; ``own``: only the fields the class declares
    itself (a $defs part), not those it inherits."""
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    names = model.__annotations__ if own else model.model_fields
    props = {n: _clean(p, defs) for n, p in schema["properties"].items() if n in names}
    out: dict[str, Any] = {"type": "object"}
    required = [n for n in schema.get("required", []) if n in props]
    if required:
        out["required"] = required
    out["properties"] = props
    return out


def spec_parts(spec_model: type[SpecModel]) -> list[type[SpecModel]]:
    """The $defs parts a kind's spec is made of, most general first (common, ...)."""
    return [
        c
        for c in reversed(spec_model.__mro__)
        if isinstance(c, type) and issubclass(c, SpecModel) and "schema_def" in c.__dict__
    ]


def build_event_schema() -> dict[str, Any]:
    """The whole event schema, as shipped (metric names are filled in per release later)."""
    top = _object(EventSpec, own=False)
    defs: dict[str, Any] = {"metricSelection": METRIC_SELECTION}
    variants = []
    kinds = available()
    for cls in kinds.values():
        parts = spec_parts(cls.spec_model)
        for part in parts:
            defs.setdefault(part.schema_def, _object(part, own=True))
        variants.append(
            {
                "allOf": [{"$ref": f"#/$defs/{p.schema_def}"} for p in parts],
                "unevaluatedProperties": False,
            }
        )
    names = ["+".join((k, *c.companions)) for k, c in kinds.items()]
    defs["target"] = {
        "description": f"Exactly one kind: {', '.join(names[:-1])}, or {names[-1]}.",
        "type": "object",
        "oneOf": variants,
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:evalrunner:event:1",
        "title": "evalrunner run event",
        "description": " ".join((EventSpec.__doc__ or "").split()),
        "type": "object",
        "required": top["required"],
        "additionalProperties": False,
        "properties": top["properties"],
        "$defs": defs,
    }


def render() -> str:
    return json.dumps(build_event_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # python -m evalrunner.event_schema: rewrite the shipped file
    SHIPPED.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {SHIPPED}\n")
