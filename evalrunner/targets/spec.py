"""The fields every target accepts, and the response-mapping fields of the JSON-returning kinds.

Each target module declares its own spec model on top of these; the event's JSON Schema is
generated from them (:mod:`evalrunner.event_schema`), so a field, its bounds, its default and
its description are written once, here or in the target's module.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
    field_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from evalrunner.http_client import DEFAULT_MAX_RESPONSE_BYTES

DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_RETRIES = 3
#: The default retry budget never exceeds this (see :func:`total_timeout_seconds`).
DEFAULT_MAX_TOTAL_TIMEOUT_SECONDS = 600.0


def _metric_selection(value: Any) -> Any:
    """A metric selection is one non-empty name or a non-empty list of them (the schema's
    ``metricSelection``); null is not one (leave the field out)."""
    names = value if isinstance(value, list) else [value]
    if not names or not all(isinstance(n, str) and n for n in names):
        raise PydanticCustomError(
            "one_of", "{value} is not valid under any of the given schemas", {"value": repr(value)}
        )
    return value


#: One metric name or a list of them (the legacy ``target.metric``), checked against the
#: registry by :func:`evalrunner.event.parse_event`.
MetricSelection = Annotated[
    str | list[str] | None,
    BeforeValidator(_metric_selection),
    WithJsonSchema({"x-ref": "metricSelection"}),
]


def _integral(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    """JSON Schema counts 2.0 as an integer; so does the model (strict mode otherwise would
    not), and the value becomes 2. A bound it breaks is reported on 2.0, as written."""
    if not (isinstance(value, float) and value.is_integer()):
        return handler(value)
    try:
        return handler(int(value))
    except ValidationError as exc:
        errors = [
            InitErrorDetails(type=e["type"], loc=e["loc"], input=value, ctx=e.get("ctx", {}))
            for e in exc.errors()
        ]
        raise ValidationError.from_exception_data(exc.title, errors) from None


#: Makes an ``int`` field an integer as JSON Schema means it: a whole number, written 2 or
#: 2.0. Put it after the field's bounds (``Annotated[int, Field(ge=1), integral]``) so that
#: the bounds still reach the generated schema.
integral = WrapValidator(_integral)
#: An integer as JSON Schema means it.
JsonInt = Annotated[int, integral]
#: Report folder names: they end up in S3 keys and local paths.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
REGION_PATTERN = r"^[a-z]{2}(-[a-z]+)+-\d$"


class SpecModel(BaseModel):
    """Strict like the JSON Schema it generates: no string-to-number coercion, no extras."""

    model_config = ConfigDict(extra="forbid", strict=True)

    #: Name of the schema's $defs entry for the fields this class declares itself (set on
    #: the classes that are parts of a kind: common, responseMapping, the kind's own).
    schema_def: ClassVar[str]

    @field_validator("*", mode="before")
    @classmethod
    def _no_null(cls, value: Any, info: ValidationInfo) -> Any:
        """An optional field is left out to mean unset; null was never accepted (the JSON
        Schema has no null), and is refused in the schema's words."""
        if value is None and info.field_name is not None:
            why = _null_refusal(cls, info.field_name)
            if why is not None:
                raise PydanticCustomError("null_given", "{why}", {"why": why})
        return value


@cache
def _null_refusal(model: type[SpecModel], field: str) -> str | None:
    """Why null does not fit ``field``, as the JSON Schema says it; None where the field's
    own validator says so (the target, a metric selection)."""
    node: dict[str, Any] = model.model_json_schema()["properties"][field]
    options = [o for o in node.get("anyOf", [node]) if o != {"type": "null"}]
    if len(options) != 1:
        return None
    (option,) = options
    lines = []  # one per keyword null breaks, as the schema reports them
    if "type" in option:
        lines.append(f"None is not of type {option['type']!r}")
    if "enum" in option:
        lines.append(f"None is not one of {option['enum']!r}")
    if lines:
        return "\n".join(lines)
    if "$ref" in option:
        return "None is not of type 'object'"
    return None


class TargetSpec(SpecModel):
    """Fields every kind accepts (the schema's ``common`` definition)."""

    #: Name of the $defs entry these fields are published under.
    schema_def: ClassVar[str] = "common"

    metric: MetricSelection = None
    name: str | None = Field(
        default=None,
        pattern=NAME_PATTERN,
        description="Folder name under test-reports/; defaults to the target's own name.",
    )
    timeout_seconds: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0, le=900)
    max_retries: JsonInt = Field(default=DEFAULT_MAX_RETRIES, ge=0, le=10)
    total_timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        le=900,
        description="Budget for one case's target calls, retries and backoff included; a "
        "retry that cannot start within it is not made. Default: 3 x timeout_seconds, at most "
        "600 (never less than timeout_seconds). timeout_seconds bounds each whole call "
        "(connect, send, read the full body).",
    )
    max_response_bytes: JsonInt = Field(
        default=DEFAULT_MAX_RESPONSE_BYTES,
        ge=1024,
        le=268435456,
        description="Cap on one response body or payload; reading stops there and the case "
        "is recorded as a target error naming this field.",
    )
    region: str | None = Field(default=None, pattern=REGION_PATTERN)

    #: The target object exactly as the event wrote it (set by
    #: :func:`evalrunner.targets.registry.parse_spec`): what :meth:`as_written` gives back.
    _written: dict[str, Any] | None = PrivateAttr(default=None)

    def as_written(self) -> dict[str, Any]:
        """The target object as the user wrote it: a parsed spec is typed (``30`` becomes
        ``30.0``, defaults are filled in, fields come in the model's order), but what a run
        stores, shows in its reports and hands each target's constructor is the object the
        event gave, so parsing it changes nothing a user reads. A spec built in code (not
        parsed) gives the fields that were set."""
        if self._written is not None:
            return copy.deepcopy(self._written)
        return self.model_dump(mode="json", exclude_unset=True)

    @property
    def call_budget(self) -> float:
        """Seconds for one case's calls, retries and backoff included: the spec's
        ``total_timeout_seconds``, else three timeouts but at most 10 minutes (so a case and
        its evaluators still end inside the run-case Lambda's 15), never less than one."""
        if self.total_timeout_seconds is not None:
            return self.total_timeout_seconds
        return max(
            self.timeout_seconds,
            min(3 * self.timeout_seconds, DEFAULT_MAX_TOTAL_TIMEOUT_SECONDS),
        )


class ResponseMappingSpec(SpecModel):
    """JMESPath fields of the kinds that answer arbitrary JSON (``responseMapping``)."""

    schema_def: ClassVar[str] = "responseMapping"

    answer_path: str | None = Field(
        default=None, description="JMESPath to the answer in the target's JSON response."
    )
    contexts_path: str | None = Field(
        default=None,
        description="JMESPath to the retrieved chunks (a list of strings, or of objects with "
        "a text field).",
    )
    documents_path: str | None = Field(
        default=None, description="JMESPath to the retrieved document ids or URIs."
    )
    tool_path: str | None = Field(
        default=None, description="JMESPath to the tool the target chose."
    )
    intent_path: str | None = Field(
        default=None, description="JMESPath to the intent the target detected."
    )
    steps_path: str | None = Field(
        default=None,
        description="JMESPath to what an agent did, in order: a list of tool names, or of "
        "objects with name, optional kind (tool, knowledge_base, collaborator), arguments, "
        "output, failed / error.",
    )


class ConversationFieldsSpec(SpecModel):
    """Where the JSON-taking kinds (HTTP, Lambda, Step Functions) put a conversation in their
    request (``conversationFields``)."""

    schema_def: ClassVar[str] = "conversationFields"

    history_field: str = Field(
        default="conversation",
        min_length=1,
        description="Request field that carries the earlier turns, a list of {role, content} "
        "(the suite's conversation column; in a scripted conversation, every earlier turn "
        "with the target's actual answer). Sent only when there are earlier turns.",
    )
    session_id_field: str = Field(
        default="session_id",
        min_length=1,
        description="Request field that carries the session id of a scripted conversation: "
        "the same for every turn of one conversation in one iteration (a target with its "
        "own memory keys on it). Not sent for single-turn cases.",
    )
