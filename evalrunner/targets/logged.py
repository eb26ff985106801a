"""Answers the system already logged (``"logged"``): score the suite, call nothing.

An evaluation sheet of what a system did (``answer_from_system``, ``*_by_system`` columns) or
a test lab carries each case's answer; such a run needs no target, only a name for its
reports. ``{"logged": "hr-eval"}`` is that target: the reports go under
``test-reports/hr-eval/``, and a case without a logged answer fails with a message that says
which column to fill (it never reaches a system). ``evalrunner run`` without ``--target``
uses it, named after the suite, when every case carries its answer.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from evalrunner.errors import TargetError
from evalrunner.suite.model import TestCase
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.registry import register
from evalrunner.targets.spec import NAME_PATTERN, SpecModel, TargetSpec


class LoggedFields(SpecModel):
    """``{"logged": "<report name>"}``: the suite carries every answer."""

    schema_def: ClassVar[str] = "logged"

    logged: str = Field(
        pattern=NAME_PATTERN,
        description="Name of the run's report folder (e.g. the suite's name); every case "
        "must carry its answer (answer_from_system / actual_answer).",
    )


class LoggedSpec(LoggedFields, TargetSpec):
    """A logged-answers target as the event gives it."""


def logged_response(case: TestCase) -> TargetResponse:
    """The response the system logged for ``case`` (its answer must be given)."""
    if case.answer is None:
        raise TargetError(
            f"case {case.case_id}{_row(case)} has no logged answer and the run calls no "
            "target: fill answer_from_system (or actual_answer), or run it against a target"
        )
    return TargetResponse(
        answer=case.answer,
        contexts=case.contexts or [],
        documents=case.documents or [],
        intent=case.intent,
        tool=case.tool,
        data=case.data,
        steps=case.steps or [],
    )


def _row(case: TestCase) -> str:
    return f" (row {case.row})" if case.row is not None else ""


def missing_answers(cases: list[TestCase]) -> list[str]:
    """``case-0003 (row 4)`` for every case without a logged answer."""
    return [f"{c.case_id}{_row(c)}" for c in cases if c.answer is None]


@register
class LoggedTarget(Target):
    """Returns each case's logged answer; used only when every case has one."""

    kind = "logged"
    spec_model = LoggedSpec
    options: LoggedSpec

    def __init__(self, spec: dict[str, Any], *, session: Any = None) -> None:
        super().__init__(spec)

    def invoke(self, case: TestCase) -> TargetResponse:
        return logged_response(case)
