"""What every target returns, and the interface each target module implements."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalrunner.errors import ConfigError
from evalrunner.suite.model import TestCase, Turn
from evalrunner.targets._common import report_name, sanitise_name
from evalrunner.targets.steps import AgentStep

if TYPE_CHECKING:
    from evalrunner.targets.spec import TargetSpec

#: The most a target may report before the number is treated as nonsense and dropped:
#: latency above a day, a billion tokens, a million in cost are payload bugs (or hostile),
#: and one of them would dominate every average, the slowest/costliest insights and the
#: leaderboard.
MAX_REPORTED: dict[str, float] = {
    "latency_ms": 86_400_000.0,
    "input_tokens": 1_000_000_000,
    "output_tokens": 1_000_000_000,
    "cost": 1_000_000.0,
}


def distrust_numbers(values: dict[str, Any]) -> dict[str, Any]:
    """A target's reported latency, token counts and cost, kept only when they are sane: a
    finite, non-negative number within :data:`MAX_REPORTED` (tokens rounded to whole numbers).
    Anything else is dropped (None, so the measured latency is used instead) and a note
    saying what and why is added to ``notes``, so the case is still scored and reported and
    no NaN or Infinity can reach a report."""
    out = dict(values)
    notes = list(out.get("notes") or [])
    for field, limit in MAX_REPORTED.items():
        value = out.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            why = f"not a number ({type(value).__name__})"
        elif not math.isfinite(value):
            why = f"{value} is not finite"
        elif value < 0:
            why = f"{value:g} is negative"
        elif value > limit:
            why = f"{value:g} is above {limit:g}"
        else:
            out[field] = round(value) if field.endswith("_tokens") else float(value)
            continue
        out[field] = None
        notes.append(f"the target reported {field} {why}: ignored")
    out["notes"] = notes
    return out


class TargetResponse(BaseModel):
    """A target's answer, normalised: later steps never see a raw payload."""

    model_config = ConfigDict(extra="forbid")

    answer: str
    contexts: list[str] = Field(default_factory=list, description="retrieved chunks / citations")
    documents: list[str] = Field(default_factory=list, description="retrieved document ids/URIs")
    tool: str | None = None
    intent: str | None = None
    data: str | None = Field(default=None, description="data a tool or query retrieved")
    #: what the agent did, in order (tools called, knowledge bases queried, hand-overs)
    steps: list[AgentStep] = Field(default_factory=list)
    latency_ms: float | None = Field(default=None, description="set by the target if it knows")
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    #: What was changed on the way in (a reported number that was dropped, ...), shown with
    #: the case in details.csv; the case is scored all the same.
    notes: list[str] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _distrust(cls, values: Any) -> Any:
        return distrust_numbers(values) if isinstance(values, dict) else values


@dataclass(frozen=True)
class ConversationSession:
    """Where one turn of a scripted conversation stands: the session it belongs to (one per
    conversation × iteration × attempt, so a re-run never meets the memory of an earlier
    one), its 1-based position, and the fixed turns the suite puts before the first."""

    id: str
    position: int
    prior: tuple[Turn, ...] = ()


#: How to allow a target the deployed runner may not call yet.
DEPLOY_HINT = "add it to targets in cdk.json (or set allow_all_targets: true)"


@dataclass(frozen=True)
class IamGrant:
    """One IAM statement the deployed runner's role needs to call a kind of target.

    ``resource`` is a pattern, formatted once per entry of the cdk.json ``targets`` list the
    target names in ``deploy_list``: with ``{arn}``, ``{partition}``, ``{region}``,
    ``{account}`` and ``{name}`` (the part after the resource type) for a list of ARNs, or
    with the entry's own fields plus ``{partition}``, ``{region}`` and ``{account}`` (the
    stack's, where the entry gives none) for a list of objects. ``"*"`` is for actions that
    have no resource type; ``wildcard_reason`` then tells cdk-nag why a wildcard is needed.
    """

    sid: str
    actions: tuple[str, ...]
    resource: str
    wildcard_reason: str | None = None


class Target(ABC):
    """A system under test.

    Implementations are built from the event's ``target`` object, hold their clients, and are
    safe to call from several threads at once (the local engine runs cases concurrently).
    ``invoke`` raises :class:`evalrunner.errors.TargetError` with a message the user can act
    on; it never returns a half-filled response.
    """

    #: The key in the event's target object that selects this kind.
    kind: ClassVar[str]
    #: The kind's fields: validated in the event, published in its JSON Schema, parsed into
    #: ``options`` when the target is built (a test fake may leave it out: no options).
    spec_model: ClassVar[type[TargetSpec]]
    #: The spec as its model (subclasses narrow the type to their own spec model).
    options: TargetSpec | None
    #: Keys the kind cannot work without, besides ``kind``.
    companions: ClassVar[tuple[str, ...]] = ()
    #: True for kinds that call AWS: built with the injected boto3 session, and given real
    #: credentials by the local engine.
    calls_aws: ClassVar[bool] = False
    #: The list under ``targets`` in cdk.json that allows this kind's resources (None: the
    #: kind needs no IAM permission, e.g. HTTP).
    deploy_list: ClassVar[str | None] = None
    #: What the deployed runner's role is granted for each allowed resource.
    iam: ClassVar[tuple[IamGrant, ...]] = ()

    def __init__(self, spec: dict[str, Any], *, session: Any = None) -> None:
        """``spec``: the event's target object; ``session``: the boto3 session the AWS kinds
        build their clients from. The spec is read once, through the kind's model, into
        ``options``; a bad one is a ConfigError naming each field."""
        self.spec = spec
        self.options = self.parse_options(spec)

    @classmethod
    def parse_options(cls, spec: dict[str, Any]) -> TargetSpec | None:
        """``spec`` as the kind's :attr:`spec_model`, or ConfigError naming every bad field."""
        from pydantic import ValidationError

        model: type[TargetSpec] | None = getattr(cls, "spec_model", None)
        if model is None:
            return None
        try:
            return model.model_validate(spec)
        except ValidationError as exc:
            lines = [
                f"target.{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
            ]
            raise ConfigError("\n".join(lines)) from exc

    @classmethod
    def deploy_problems(cls, spec: dict[str, Any], allowed: Any) -> list[str]:
        """Why the deployed runner's role could not call ``spec``: it is not among the
        resources cdk.json allows (``allowed``: its ``targets`` object), which are what
        :attr:`iam` is granted on. Checked at synth, so a schedule cannot fail at 3 a.m.
        Kinds with no IAM need (HTTP, OpenAI) have nothing to check."""
        return []

    @classmethod
    def sends_contexts(cls, spec: dict[str, Any]) -> str | None:
        """The spec field that makes this target send each case's ``contexts`` in its request
        (a generation endpoint), when ``spec`` sets it; None when the target retrieves its own
        context (nothing the runner gives it reaches the model). Read from the spec alone, so
        Prepare can refuse a context perturbation before any client is built."""
        return None

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        """The target's own report folder name, from the spec alone (no client is built):
        agentId-agentAliasId, the function's name, ...; by default the kind's value."""
        return sanitise_name(str(spec.get(cls.kind, "")), fallback=cls.kind)

    @property
    def name(self) -> str:
        """Folder name under ``test-reports/``: the spec's ``name``, else :meth:`own_name`."""
        return report_name(self.spec, self.own_name(self.spec))

    @abstractmethod
    def invoke(self, case: TestCase) -> TargetResponse:
        """Ask the target the case's question (after its conversation turns, if any)."""

    def invoke_turn(self, case: TestCase, session: ConversationSession) -> TargetResponse:
        """Ask one turn of a scripted conversation: ``case.conversation`` is the history so
        far (the fixed earlier turns, then each user turn with the target's *actual* answer).
        By default the history is sent like earlier turns (OpenAI messages, a callable's
        ``conversation``); kinds with a session of their own override this."""
        return self.invoke(case)
