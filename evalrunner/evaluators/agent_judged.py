"""Agent checks an LLM judge decides: ``Task completion``, and the equivalence of argument
values that ``Argument correctness`` asks for with ``judged: true``
(:mod:`evalrunner.evaluators.agent` holds the checks that need no judge).

``Task completion`` (after DeepEval's TaskCompletionMetric): one judge call reads the case's
question (and expected answer, when there is one), the agent's steps (kind, name,
arguments, what came back or the error) and its final answer; it states the task it infers,
the outcome the agent achieved, and scores in [0, 1] how completely the outcome accomplishes
the task. Claims in the answer that no step backs are not an outcome. Threshold 0.75. It is a
per-case metric: a single-turn agent case, and each turn of a conversation (as every
single-turn metric); whether a conversation as a whole reached the user's goals is
``Conversation completeness``. A case whose target reported no steps is judged on its answer
alone (the prompt says there were none). Worked example in docs/conversation_metrics.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored
from evalrunner.evaluators.judge_base import JudgeEvaluator, case_blocks
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Judge
from evalrunner.judge.extract import Verdicts, counted
from evalrunner.judge.prompts import build, tagged, tagged_list
from evalrunner.targets.steps import AgentStep

#: Where this module's evaluators come in the catalog (see evaluators.registry): after the
#: agent checks that need no judge.
CATALOG_POSITION = 86

#: The most characters of one step's arguments or output shown to the judge.
STEP_CHARS = 600


def step_text(step: AgentStep) -> str:
    """One step as the judge reads it: ``tool hr/book(days=2) -> booked``."""
    arguments = json.dumps(step.arguments, ensure_ascii=False, sort_keys=True, default=str)
    text = f"{step.kind} {step.name} arguments: {arguments[:STEP_CHARS]}"
    if step.failed:
        return f"{text}\nFAILED: {(step.error or 'no error message')[:STEP_CHARS]}"
    if step.output is not None:
        return f"{text}\nreturned: {step.output[:STEP_CHARS]}"
    return text


#: The most steps shown to the judge (an agent stuck in a loop must not make a huge prompt).
STEPS_SHOWN = 50


def steps_block(steps: Sequence[AgentStep]) -> str:
    """The steps as delimited data; beyond STEPS_SHOWN, one last item says how many more."""
    texts = [step_text(s) for s in steps[:STEPS_SHOWN]]
    if len(steps) > STEPS_SHOWN:
        texts.append(f"... and {len(steps) - STEPS_SHOWN} more steps, not shown")
    return tagged_list("steps", "step", texts)


class TaskJudgement(BaseModel):
    """The judge's reading of one agent run."""

    model_config = ConfigDict(extra="ignore")

    task: str
    outcome: str
    reason: str = ""
    score: float = Field(ge=0.0, le=1.0)


_TASK = (
    "An AI agent was given the request inside <question> (the expected answer inside "
    "<expected_answer>, when present, shows what a correct outcome looks like). It took the "
    "steps inside <steps>, in order (each: kind, name, arguments, and what came back or the "
    "error; empty when the agent reported none), then replied with the text inside <answer>. "
    "1. State the task the user wanted done, in one sentence, inferred from the request. "
    "2. State the outcome the agent actually achieved, from its steps and its reply; a claim "
    'in the reply that no step backs ("booked" with no booking step) is not an outcome. '
    "3. Score how completely and correctly the outcome accomplishes the task, from 0.0 (not "
    "at all, or the wrong thing done) to 1.0 (fully and correctly done)."
)
_REPLY = (
    'Reply with one JSON object and nothing else: {"task": "<the task>", "outcome": "<what '
    'was achieved>", "reason": "<one short sentence>", "score": <a number from 0.0 to 1.0>}.'
)


def _clip(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register
class TaskCompletion(JudgeEvaluator):
    """Did the agent get done what the user asked? The judge infers the task from the
    request, states the outcome the steps actually achieved (a reply claiming a booking no
    step made is no booking), and scores 0–1. Here a
    :class:`~evalrunner.judge.scripted.ScriptedJudge` gives the reply a model would write:

    >>> from evalrunner.judge.scripted import ScriptedJudge
    >>> judge = ScriptedJudge({"task completion": {
    ...     "task": "book a flight to Paris", "outcome": "flights searched, none booked",
    ...     "reason": "the reply claims a booking no step made", "score": 0.2}})
    >>> sample = Sample(question="Book me a flight to Paris", answer="Booked!",
    ...                 steps=[AgentStep(name="search_flights", arguments={"to": "Paris"})])
    >>> for r in TaskCompletion(judge=judge).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Task completion: 0.20 task: "book a flight to Paris"; outcome: "flights searched, none
        booked"; the reply claims a booking no step made
    """

    name = "Task completion"
    aliases = ("TaskCompletion", "Task completion (agent)", "Goal completion")
    description = "the agent's steps and answer accomplished the task the question asks (LLM judge)"
    inputs: ClassVar[frozenset[Input]] = frozenset({Input.QUESTION, Input.ANSWER})
    in_defaults: ClassVar[bool] = False
    metrics = (
        MetricSpec(
            "Task completion",
            "how completely the agent's steps and answer accomplished the inferred task (0-1)",
            primary=True,
        ),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        data = [*case_blocks(sample, context=False, answer=False), steps_block(sample.steps)]
        data.append(tagged("answer", sample.answer or ""))
        reply = self.ask(build(_TASK, data, _REPLY), TaskJudgement, purpose="task completion")
        judged = reply.value
        reason = f'task: "{_clip(judged.task)}"; outcome: "{_clip(judged.outcome)}"'
        if judged.reason.strip():
            reason += f"; {_clip(judged.reason)}"
        return {self.name: Scored(judged.score, reason)}


# --------------------------------------------------------------------------- argument values

_EQUIVALENCE_TASK = (
    "Each <argument> below is one argument of a tool call an AI agent made: the tool, the "
    "argument's name, the value a test expected and the value the agent passed (as JSON). "
    "For each, decide whether the passed value means the same as the expected one for that "
    'argument, so the tool would do the same thing with it ("2026-05-04" and "May 4, 2026" '
    'as a date, "NYC" and "New York City" as a city); a different quantity, date, id, '
    "category or entity is not equivalent."
)
_EQUIVALENCE_REPLY = (
    'Reply with one JSON object and nothing else: {"verdicts": [{"reason": "<one short '
    'sentence>", "verdict": true or false}, ...]} with exactly one entry per <argument>, in '
    "order."
)


def equivalent(judge: Judge, pairs: Sequence[tuple[str, str, Any, Any]]) -> list[tuple[bool, str]]:
    """The judge's verdict on each ``(tool, argument, expected, passed)``: whether the values
    mean the same, with its reason. All pairs of a case in one call."""
    items = [
        f"tool: {tool}\nargument: {key}\nexpected: {json.dumps(want, ensure_ascii=False)}\n"
        f"passed: {json.dumps(got, ensure_ascii=False, default=str)}"
        for tool, key, want, got in pairs
    ]
    blocks = [tagged("argument", item, id=i) for i, item in enumerate(items, start=1)]
    messages = build(_EQUIVALENCE_TASK, blocks, _EQUIVALENCE_REPLY)
    schema = counted(Verdicts, verdicts=len(items))
    reply = judge.ask(messages, schema, purpose="argument equivalence").value
    return [(v.verdict, v.reason) for v in reply.verdicts]


__all__ = ["TaskCompletion", "equivalent", "step_text", "steps_block"]
