"""What every target returns, and the interface each target module implements."""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalrunner.suite.model import TestCase

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


class Target(ABC):
    """A system under test.

    Implementations are built from the event's ``target`` object, hold their clients, and are
    safe to call from several threads at once (the local engine runs cases concurrently).
    ``invoke`` raises :class:`evalrunner.errors.TargetError` with a message the user can act
    on; it never returns a half-filled response.
    """

    #: The key in the event's target object that selects this kind.
    kind: ClassVar[str]

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    @property
    @abstractmethod
    def name(self) -> str:
        """Folder name under ``test-reports/``: agentId-agentAliasId, function name, ..."""

    @abstractmethod
    def invoke(self, case: TestCase) -> TargetResponse:
        """Ask the target the case's question (after its conversation turns, if any)."""
