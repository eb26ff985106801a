"""The test case as every later step sees it, whatever file format it came from."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalrunner.targets.steps import AgentStep, ExpectedStep


class Turn(BaseModel):
    """One prior turn of a multi-turn conversation."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"]
    content: str


#: The kind of a hand-written variant (a suite row naming ``variant_of``), and the label it is
#: grouped under when its row names no ``variant_kind``.
VARIANT = "variant"


class Perturbation(BaseModel):
    """What links a perturbed (or hand-written variant) case to its original."""

    model_config = ConfigDict(extra="forbid")

    #: case_id of the original case
    of: str
    #: the perturbator (``variant`` for a hand-written variant)
    kind: str
    #: the label the reports group it under (unique in the run)
    name: str
    intensity: float | None = None
    seed: int | None = None
    #: the original's question, for the side-by-side view
    original_question: str
    #: A perturbation that must change the answer (antonym): a flip there is expected.
    expect_flip: bool = False
    #: The perturbed retrieved contexts, when the perturbation touched them.
    context: bool = False
    #: misinformation: the false fact the judge planted, the 1-based number of the chunk it
    #: rewrote, and that chunk as it was.
    false_fact: str | None = None
    chunk: int | None = None
    original_context: str | None = None
    #: The metric whose verdict on the perturbed copy alone says whether the case held
    #: (misinformation: ``Misinformation handled``); None: compare verdicts with the original.
    check: str | None = None
    #: Why the perturbation could not be applied to this case (the judge failed): the copy
    #: is recorded as an error and not compared.
    error: str | None = None


class TestCase(BaseModel):
    """One row of a suite.

    ``answer`` and ``contexts`` are set only for suites whose answers were computed elsewhere
    (test-lab JSON, an evaluation sheet of what the system logged): such cases are scored
    without calling a target, from these and the other logged fields (``intent``, ``tool``,
    ``documents``, ``data``), which are read only alongside a logged answer.
    """

    __test__ = False  # not a pytest class, despite the name
    model_config = ConfigDict(extra="forbid")

    index: int = Field(ge=0, description="0-based position in the suite")
    case_id: str = Field(description="the suite's id column, else case-0001, case-0002, ...")
    row: int | None = Field(default=None, description="row number in the source, for messages")
    question: str
    expected_answer: str | None = None
    expected_contexts: list[str] = Field(default_factory=list)
    expected_intent: str | None = None
    expected_tool: str | None = None
    expected_documents: list[str] = Field(default_factory=list)
    #: The tools an agent should call, in order (agent evaluators).
    expected_tools: list[str] = Field(default_factory=list)
    #: The steps an agent should take, in order, with their arguments when given.
    expected_steps: list[ExpectedStep] = Field(default_factory=list)
    #: The data the system should have retrieved (compared exactly with ``data``).
    expected_data: str | None = None
    #: Text-matching constraints: an expression string or the list form, kept as written.
    condition: str | list[Any] | None = None
    categories: list[str] = Field(default_factory=list)
    conversation: list[Turn] = Field(default_factory=list)
    answer: str | None = None
    contexts: list[str] | None = None
    documents: list[str] | None = None
    intent: str | None = None
    tool: str | None = None
    data: str | None = None
    #: what the agent did, as the system logged it (``actual_steps``; None: not logged)
    steps: list[AgentStep] | None = None
    #: Columns the reader does not know, kept so they reach details.csv.
    metadata: dict[str, Any] = Field(default_factory=dict)
    #: What the reader had to change in this row's cells (e.g. a lone surrogate replaced).
    notes: list[str] = Field(default_factory=list)
    #: Set on a perturbed copy of a case (Prepare) or a hand-written variant (the suite's
    #: variant_of column): the original it is compared with in the robustness analysis.
    perturbation: Perturbation | None = None
    #: A scripted conversation: its turns in order, each a case of its own (the user's
    #: message is its question, with that turn's expectations). They are sent one after the
    #: other, each with the target's actual earlier answers (``conversation`` stays the fixed
    #: turns before the first). Empty for a single-turn case.
    turns: list[TestCase] = Field(default_factory=list)
    #: On a conversation and on each of its turns: the conversation's id.
    conversation_id: str | None = None
    #: On a turn of a conversation: its number (the suite's turn column, else 1, 2, ...).
    turn: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _turns_are_flat(self) -> TestCase:
        """A turn is one exchange: it cannot hold a conversation of its own."""
        if self.turns and any(t.turns for t in self.turns):
            raise ValueError("a turn of a conversation cannot have turns of its own")
        return self

    @property
    def is_conversation(self) -> bool:
        """Whether this case is a scripted conversation (scored turn by turn and as a whole)."""
        return bool(self.turns)


class Suite(BaseModel):
    """A named, non-empty list of cases."""

    model_config = ConfigDict(extra="forbid")

    name: str
    source: str
    cases: list[TestCase]
