"""The Agent steps section of report.html: for each agent case, what the agent did (kind,
name, arguments, output or error, in order) beside the steps the suite expected, each step
marked as matched or not, with the case's agent metric verdicts. A reviewer sees at a glance
which tool was called instead of which, where the order broke and which call failed, which
a score alone does not say. Drawn by ``templates/agent_steps.html.j2``.

A case is an agent case when its target reported steps or its suite row expects tools or
steps. Cases with a failing agent verdict come first, then the others in suite order; per
case, the first iteration that failed (else the first) is shown.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import CaseRow, ReportData
from evalrunner.targets.steps import AgentStep, ExpectedStep

#: Agent cases shown (report.json and details.csv have them all).
AGENT_CASES_SHOWN = 50

#: The evaluators whose verdicts are shown with the steps.
AGENT_EVALUATORS = frozenset(
    {
        "Tool correctness",
        "Argument correctness",
        "Step alignment & completeness",
        "Agent sanity check",
        "Task completion",
    }
)


@dataclass
class StepLine:
    number: int
    kind: str
    name: str
    arguments: str | None
    output: str | None = None
    error: str | None = None
    failed: bool = False
    #: "matched" (an expected step), "extra" (not expected), "" (nothing was expected)
    mark: str = ""


@dataclass
class AgentCaseView:
    case_id: str
    iteration: int
    iterations: int
    question: str
    answer: str | None
    taken: list[StepLine] = field(default_factory=list)
    expected: list[StepLine] = field(default_factory=list)
    verdicts: list[MetricResult] = field(default_factory=list)

    @property
    def failing(self) -> bool:
        return any(r.status == "scored" and r.success is False for r in self.verdicts)


@dataclass
class AgentStepsView:
    cases: list[AgentCaseView]
    #: agent cases not shown
    more: int


def _label(kind: str, name: str) -> str:
    return f"{kind}:{' '.join(name.split()).casefold()}"


def _arguments(arguments: dict[str, object] | None) -> str | None:
    if not arguments:
        return None
    return json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)


def _expected(row: CaseRow) -> list[ExpectedStep]:
    if row.expected_steps:
        return list(row.expected_steps)
    return [ExpectedStep(name=t) for t in row.expected_tools or [] if t.strip()]


def case_view(rows: list[CaseRow]) -> AgentCaseView:
    """The view of one case, from its rows (one per iteration)."""
    verdicts = {
        r.iteration: [m for m in r.results if m.evaluator in AGENT_EVALUATORS] for r in rows
    }
    failed = [r for r in rows if any(m.success is False for m in verdicts[r.iteration])]
    row = (failed or rows)[0]
    steps: list[AgentStep] = list(row.steps or [])
    expected = _expected(row)
    # A multiset match by kind and name, the way Step completeness counts.
    wanted = Counter(_label(e.kind, e.name) for e in expected)
    taken_labels = Counter(_label(s.kind, s.name) for s in steps)
    taken = []
    for i, step in enumerate(steps, start=1):
        label = _label(step.kind, step.name)
        mark = ""
        if expected:
            mark = "matched" if wanted[label] > 0 else "extra"
            wanted[label] -= 1
        taken.append(
            StepLine(
                i,
                step.kind,
                step.name,
                _arguments(step.arguments),
                step.output,
                step.error,
                step.failed,
                mark,
            )
        )
    lines = []
    for i, exp in enumerate(expected, start=1):
        label = _label(exp.kind, exp.name)
        mark = "matched" if taken_labels[label] > 0 else "missing"
        taken_labels[label] -= 1
        lines.append(StepLine(i, exp.kind, exp.name, _arguments(exp.arguments), mark=mark))
    return AgentCaseView(
        case_id=row.case_id,
        iteration=row.iteration,
        iterations=len(rows),
        question=row.question,
        answer=row.answer,
        taken=taken,
        expected=lines,
        verdicts=verdicts[row.iteration],
    )


def agent_steps_view(data: ReportData) -> AgentStepsView | None:
    """The section's data; None when the run has no agent case (no section)."""
    by_case: dict[str, list[CaseRow]] = {}
    for row in data.rows:
        if row.steps or row.expected_steps or row.expected_tools:
            by_case.setdefault(row.case_id, []).append(row)
    if not by_case:
        return None
    views = [case_view(rows) for rows in by_case.values()]
    ordered = sorted(views, key=lambda v: not v.failing)  # stable: suite order within
    return AgentStepsView(ordered[:AGENT_CASES_SHOWN], max(0, len(ordered) - AGENT_CASES_SHOWN))
