"""The project file's model: what ``evalrunner.toml`` / ``evalrunner.yaml`` may hold.

One definition per concept. A target is the event's target, parsed by the same kind models
(:func:`evalrunner.targets.registry.parse_spec`); every run setting the file shares with the
event (iterations, judge, judge_metrics, profile, plugins, the gates, ...) is the event's own
pydantic field, copied from :class:`~evalrunner.event_schema.EventSpec` with its type, bounds
and description, never re-declared. What only a project has is declared here: the named
targets and suites, the metrics table (a selection with per-metric thresholds and options,
which become the event's ``metrics``, ``thresholds`` and ``evaluator_options``), the gates
table and the output folder. Each (target × suite) cell then becomes an ``EventSpec``
(:mod:`evalrunner.project.cells`), so the event's own rules check every cell.
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    field_validator,
)
from pydantic.fields import FieldInfo

from evalrunner.event_rules import SUITE_EXTENSIONS
from evalrunner.event_schema import AnyObject, EventSpec, one_target_kind
from evalrunner.targets.registry import parse_spec
from evalrunner.targets.spec import TargetSpec

#: A target's or a suite's name: also the folder of its reports, so no path characters.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
Name = Annotated[str, Field(pattern=NAME_PATTERN)]

#: The event's fields a project sets once for every cell, at the top of the file.
SHARED_FIELDS = (
    "iterations",
    "max_concurrency",
    "max_text_chars",
    "cases_per_task",
    "profile",
    "plugins",
    "judge",
    "judge_metrics",
    "perturbations",
)
#: The event's fields of the ``[gates]`` table: what fails the run.
GATE_FIELDS = (
    "fail_on",
    "fail_on_regression",
    "fail_under",
    "thresholds",
    "baseline",
    "max_error_share",
)
DEFAULT_OUTPUT = "evalrunner-out"


class ProjectPart(BaseModel):
    """Strict like the event (no string-to-number coercion), and an unknown key is an error
    that lists the valid ones, never ignored: a misspelt gate must not silently pass."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _event_fields(names: tuple[str, ...]) -> dict[str, Any]:
    """The event's own fields ``names``, type, bounds and description as EventSpec declares
    them. ``iterations`` is required in an event (no default, as the seed's contract says);
    a project defaults it to 1, as ``evalrunner run`` does."""
    fields: dict[str, Any] = {}
    for name in names:
        info: FieldInfo = EventSpec.model_fields[name]
        if name == "iterations":
            info = copy.copy(info)
            info.default = 1
            info.description = "How many times every case is run; default 1."
        fields[name] = (info.annotation, info)
    return fields


if TYPE_CHECKING:  # the composed models are built at run time; mypy reads them as their base
    ProjectGates = ProjectPart
else:
    ProjectGates = create_model(
        "ProjectGates",
        __base__=ProjectPart,
        __doc__="What fails the run: the event's fail_on, fail_on_regression, fail_under, "
        "thresholds, baseline and max_error_share.",
        **_event_fields(GATE_FIELDS),
    )


class MetricSettings(ProjectPart):
    """One selected evaluator: its threshold (its primary metric's) and its options."""

    threshold: float | None = Field(
        default=None,
        description="Success threshold of the evaluator's primary metric (the event's "
        "thresholds); default: the metric's own.",
    )
    options: AnyObject | None = Field(
        default=None,
        description="The evaluator's settings (the event's evaluator_options); 'evalrunner "
        "metrics' lists what each accepts.",
    )

    @field_validator("threshold")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number such as 0.5 (not nan or inf)")
        return value


def _metric_table(value: Any) -> Any:
    """``metrics = ["Token F1", "BLEU"]`` is the table ``{"Token F1": {}, "BLEU": {}}``."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return {name: {} for name in value}
    return value


def _target(value: Any) -> TargetSpec:
    """A target as the event's ``target`` field reads it: one kind, its own spec model."""
    return parse_spec(one_target_kind(value))


ProjectTarget = Annotated[TargetSpec, BeforeValidator(_target), WithJsonSchema({"x-ref": "target"})]


def _suite_file(source: str) -> str:
    if not source.lower().endswith(SUITE_EXTENSIONS):
        raise ValueError(f"{source!r} must end with one of {', '.join(SUITE_EXTENSIONS)}")
    return source


SuiteSource = Annotated[
    str,
    AfterValidator(_suite_file),
    Field(
        min_length=1,
        description="A suite file (.xlsx, .csv or .json), relative to the project file's "
        "folder, or s3://bucket/key (read with your AWS credentials before the run).",
    ),
]
MetricTable = Annotated[
    dict[Annotated[str, Field(min_length=1)], MetricSettings],
    BeforeValidator(_metric_table),
    WithJsonSchema(
        {
            "description": "The evaluators to run, by display name: a list of names, or a "
            "table of name = {threshold, options}. Default: as an event naming none.",
            "oneOf": [
                {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
                {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": {"x-ref": "MetricSettings"},
                },
            ],
        }
    ),
]


class ProjectOwn(ProjectPart):
    """What only a project file has: named targets and suites, the metrics table, the gates
    and the output folder (the run settings it shares with the event are added below)."""

    targets: dict[Name, ProjectTarget] = Field(
        min_length=1,
        description="Targets by name, each exactly the event's target object (url, openai, "
        "lambdaArn, agentId+agentAliasId, ...). The name is its report folder unless the "
        "target sets its own 'name'.",
    )
    suites: dict[Name, SuiteSource] = Field(
        min_length=1, description="Suites by name: a file path (relative to this file) or s3://."
    )
    metrics: MetricTable | None = None
    gates: ProjectGates = Field(default_factory=ProjectGates)
    output: Annotated[str, Field(min_length=1)] = Field(
        default=DEFAULT_OUTPUT,
        description="Folder of the reports, relative to this file: one subfolder per cell "
        "(<output>/<target>/<suite>/) and the matrix summary (matrix.html, matrix.json).",
    )


if TYPE_CHECKING:
    ProjectFile = ProjectOwn
else:
    ProjectFile = create_model(
        "ProjectFile",
        __base__=ProjectOwn,
        __doc__="An evalrunner project: targets × suites, the metrics, the judge and the gates "
        "every cell of the matrix runs with. 'evalrunner run' with no arguments runs it.",
        **_event_fields(SHARED_FIELDS),
    )


def shared_settings(raw: dict[str, Any]) -> dict[str, Any]:
    """The event fields the file set at its top, as written (a validated file's raw data);
    those left unset stay the event's defaults."""
    return {k: raw[k] for k in SHARED_FIELDS if k in raw}


def gate_settings(raw: dict[str, Any]) -> dict[str, Any]:
    """The ``[gates]`` table's event fields, as written (``thresholds`` is merged with the
    metrics table's by the cells)."""
    gates = raw.get("gates") or {}
    return {k: gates[k] for k in GATE_FIELDS if k in gates and k != "thresholds"}
