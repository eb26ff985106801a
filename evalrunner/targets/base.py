"""What every target returns, and the interface each target module implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.suite.model import TestCase


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
