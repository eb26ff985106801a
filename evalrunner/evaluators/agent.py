"""Agent checks that need no judge: did the agent call the tools it should have, and did it
behave sanely on the way? They read the steps a target reports
(:mod:`evalrunner.targets.steps`: a Bedrock agent's trace, OpenAI ``tool_calls``, a
``steps_path``).

``Tool correctness`` (one metric of the same name): with the case's ``expected_tools`` E
(in order) and the tools the agent called C (in order; knowledge-base lookups and hand-overs
left out):

* order-insensitive (default): score = |E ∩ C| / |E|, each expected tool counted once as
  many times as it is expected (a multiset), so ``[a, a]`` needs two calls of ``a``;
* ``order_sensitive: true``: score = LCS(E, C) / |E|, the longest common subsequence, so the
  expected tools must be called in that order (others may come between);
* ``exact: true``: additionally, any tool called but not expected makes the score 0.

Threshold 1.0: every expected tool called. The reason names the missing and the extra tools,
e.g. "expected hr/get_balance, called hr/get_policy: missing hr/get_balance; extra
hr/get_policy". Tool names are compared trimmed and case-insensitively. Worked example:
E = [search, book], C = [book, search, search]: unordered 2/2 = 1.0 (extra: one search);
ordered LCS([search, book], [book, search, search]) = 1, score 0.5.

``Argument correctness`` (no judge by default): for each expected step of ``expected_steps``
that gives ``arguments``, the first not yet matched call of that tool is compared key by key
(:func:`normal_value`: strings trimmed, whitespace collapsed and case-folded; numbers by
value, ``2`` = ``2.0`` = ``"2"``; booleans apart from numbers; lists in order; objects key by
key): score = matching argument values / expected argument values, over all such steps; an
expected call that never happened counts all its arguments as wrong, a missing argument is
wrong. Extra arguments the agent passed are allowed. With ``judged: true`` the run's judge
decides, in one call per case, whether each pair of values that differ mean the same
(:func:`evalrunner.evaluators.agent_judged.equivalent`). Example: expected book(days=2,
type="annual"), called book(days=2, type="sick") → 1/2.

``Step alignment`` and ``Step completeness`` (H2O's "Step alignment & completeness", no
judge), from the expected step names S and the steps taken T (knowledge-base lookups and
hand-overs included, each as its kind and name): completeness = |S ∩ T| / |S| (a multiset:
were all expected steps taken?), alignment = LCS(S, T) / max(|S|, |T|) (were they taken in
that order, with nothing else in between?). Expected [search, book], taken [search, search,
book]: completeness 1.0, alignment 2/3. The reasons name the expected steps not taken, the
ones taken out of order (taken, but not in the longest in-order match) and the extra steps.

``Agent sanity check`` (H2O's name; pass/fail, 1 = sane): the steps show no loop (the same
call — name and arguments — made more than ``max_repeats`` times, default 2), no failed step,
no step without a name, and the agent ended with a non-empty answer. The reason lists every
problem found. Cases whose target reported no steps are skipped (nothing to check); the
evaluator runs only when named.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner.evaluators.agent_judged import equivalent
from evalrunner.evaluators.base import (
    NO_JUDGE,
    Evaluator,
    Input,
    MetricSpec,
    RunServices,
    Sample,
    Scored,
    SkipCase,
)
from evalrunner.evaluators.registry import register
from evalrunner.judge.base import Judge
from evalrunner.targets.steps import AgentStep, ExpectedStep, tool_names

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 85


def _norm(name: str) -> str:
    return " ".join(name.split()).casefold()


def called_tools(sample: Sample) -> list[str]:
    """The tools the agent called, in order: from its steps, else from the single ``tool``
    label a target reported (comma-separated when it called several)."""
    if sample.steps:
        return tool_names(sample.steps)
    if sample.tool:
        return [t.strip() for t in sample.tool.split(",") if t.strip()]
    return []


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Longest common subsequence: the classic dynamic programme (no library offers it for
    arbitrary sequences of labels; difflib's matcher finds blocks, not the LCS)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def lcs_matched(a: Sequence[str], b: Sequence[str]) -> set[int]:
    """The positions in ``a`` of one longest common subsequence of ``a`` and ``b`` (the same
    programme as :func:`lcs_length`, kept whole to walk back through it)."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i, x in enumerate(a, start=1):
        for j, y in enumerate(b, start=1):
            table[i][j] = (
                table[i - 1][j - 1] + 1 if x == y else max(table[i - 1][j], table[i][j - 1])
            )
    matched: set[int] = set()
    i, j = len(a), len(b)
    while i and j:
        if a[i - 1] == b[j - 1]:
            matched.add(i - 1)
            i, j = i - 1, j - 1
        elif table[i - 1][j] >= table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return matched


class ToolCorrectnessOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    order_sensitive: bool = Field(
        default=False, description="the expected tools must be called in their order"
    )
    exact: bool = Field(default=False, description="a tool called but not expected scores 0")


@register
class ToolCorrectness(Evaluator[ToolCorrectnessOptions]):
    """Whether the agent called the tools the case expects (DeepEval's tool correctness): the
    share of expected tools called, so a skipped step costs its share, not the whole case.

    >>> steps = [AgentStep(name="search_flights", arguments={"to": "Paris"}),
    ...          AgentStep(name="book_flight", arguments={"flight": "AF12"})]
    >>> sample = Sample(question="Book me a flight to Paris", answer="Booked AF12.", steps=steps,
    ...                 expected_tools=["search_flights", "book_flight", "send_receipt"])
    >>> for r in ToolCorrectness().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Tool correctness: 0.67 - expected search_flights, book_flight, send_receipt, called
        search_flights, book_flight: missing send_receipt
    """

    name = "Tool correctness"
    aliases = ("Tool call correctness", "ToolCorrectness")
    description = "the expected tools (expected_tools) were called, optionally in order"
    inputs = frozenset({Input.EXPECTED_TOOLS, Input.ANSWER})
    metrics = (
        MetricSpec(
            "Tool correctness",
            "share of the expected tools the agent called (in order, with order_sensitive)",
            threshold=1.0,
            primary=True,
        ),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        expected = [_norm(t) for t in sample.expected_tools if t.strip()]
        shown = {_norm(t): t for t in [*called_tools(sample), *sample.expected_tools]}
        called = [_norm(t) for t in called_tools(sample)]
        want, got = Counter(expected), Counter(called)
        missing = list((want - got).elements())
        extra = list((got - want).elements())
        if self.options.order_sensitive:
            matched = lcs_length(expected, called)
        else:
            matched = sum((want & got).values())
        value = matched / len(expected)
        if self.options.exact and extra:
            value = 0.0
        problems = []
        if missing:
            problems.append("missing " + ", ".join(shown[t] for t in missing))
        if extra:
            problems.append("extra " + ", ".join(shown[t] for t in extra))
        if self.options.order_sensitive and not missing and matched < len(expected):
            problems.append("called out of order")
        said = ", ".join(shown[t] for t in called) or "no tool"
        head = f"expected {', '.join(sample.expected_tools)}, called {said}"
        reason = f"{head}: {'; '.join(problems)}" if problems else f"{head}: all expected called"
        return {"Tool correctness": Scored(value, reason)}


#: A string that is a plain decimal number ("2", "-0.5", "1e3"): compared as that number.
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?")


def normal_value(value: Any) -> Any:
    """An argument value as it is compared: strings trimmed, inner whitespace collapsed and
    case-folded; numbers by value, a numeric string too (``2``, ``2.0`` and ``"2"`` are
    equal: models often quote numbers in tool calls); booleans apart from numbers (``true``
    is not ``1``); lists element by element, objects key by key."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = " ".join(value.split()).casefold()
        return float(text) if _NUMBER.fullmatch(text) else text
    if isinstance(value, list | tuple):
        return [normal_value(v) for v in value]
    if isinstance(value, Mapping):
        return {" ".join(str(k).split()).casefold(): normal_value(v) for k, v in value.items()}
    return value


class ArgumentOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    judged: bool = Field(
        default=False,
        description="the run's judge decides whether values that differ mean the same",
    )


@register
class ArgumentCorrectness(Evaluator[ArgumentOptions]):
    """Whether the tools were called with the expected arguments: the right tool with the wrong
    flight number is a wrong booking, which tool correctness alone cannot see.

    >>> steps = [AgentStep(name="search_flights", arguments={"to": "Paris"}),
    ...          AgentStep(name="book_flight", arguments={"flight": "AF12"})]
    >>> expected = [ExpectedStep(name="search_flights", arguments={"to": "Paris"}),
    ...             ExpectedStep(name="book_flight", arguments={"flight": "AF34"})]
    >>> sample = Sample(question="Book me a flight to Paris", answer="Booked AF12.", steps=steps,
    ...                 expected_steps=expected)
    >>> for r in ArgumentCorrectness().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Argument correctness: 0.50 - book_flight: flight = "AF12", expected "AF34"
    """

    name = "Argument correctness"
    aliases = ("Tool argument correctness", "ArgumentCorrectness")
    description = "the tools got the arguments expected_steps gives them"
    inputs = frozenset({Input.EXPECTED_STEPS, Input.ANSWER})
    metrics = (
        MetricSpec(
            "Argument correctness",
            "share of the expected argument values the agent passed",
            threshold=1.0,
            primary=True,
        ),
    )

    def __init__(
        self,
        thresholds: Mapping[str, float] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        judge: Judge | None = None,
        threshold: float | None = None,
    ) -> None:
        super().__init__(thresholds, options, threshold=threshold)
        #: Asked only with ``judged: true``, and only about values that differ.
        self.judge = judge

    @classmethod
    def for_run(
        cls,
        thresholds: Mapping[str, float] | None,
        options: Mapping[str, Any] | None,
        services: RunServices,
    ) -> Self:
        # A run that compares exactly never builds a judge.
        judge = services.judge if cls.uses_judge(options) else None
        return cls(thresholds, options, judge=judge)

    @classmethod
    def uses_judge(cls, options: Mapping[str, Any] | None) -> bool:
        # Read as the run reads it ("judged": "false" is False); options that do not parse
        # are refused at Prepare, so they ask nothing of the judge.
        try:
            return ArgumentOptions.model_validate(dict(options or {})).judged
        except ValidationError:
            return False

    @classmethod
    def applies_to(cls, sample: Sample) -> bool:
        return any(step.arguments for step in sample.expected_steps)

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        checked = [e for e in sample.expected_steps if e.arguments]
        if not checked:
            raise SkipCase("no expected step gives arguments")
        if self.options.judged and self.judge is None:
            raise SkipCase(f"judged: true needs a judge: {NO_JUDGE}")
        calls = [s for s in sample.steps if s.kind == "tool"]
        used: set[int] = set()
        right = total = 0
        problems: list[str] = []
        differing: list[tuple[str, str, Any, Any]] = []
        for expected in checked:
            assert expected.arguments is not None
            total += len(expected.arguments)
            index = next(
                (
                    i
                    for i, s in enumerate(calls)
                    if i not in used and _norm(s.name) == _norm(expected.name)
                ),
                None,
            )
            if index is None:
                problems.append(f"{expected.name} was not called")
                continue
            used.add(index)
            got = calls[index].arguments
            for key, want in expected.arguments.items():
                if key not in got:
                    problems.append(f"{expected.name}: {key} = nothing, expected {_shown(want)}")
                elif normal_value(got[key]) == normal_value(want):
                    right += 1
                elif self.options.judged:
                    differing.append((expected.name, key, want, got[key]))
                else:
                    problems.append(
                        f"{expected.name}: {key} = {_shown(got[key])}, expected {_shown(want)}"
                    )
        if differing:
            assert self.judge is not None
            for (tool, key, want, got), (same, why) in zip(
                differing, equivalent(self.judge, differing), strict=True
            ):
                if same:
                    right += 1
                else:
                    because = f" (judge: {' '.join(why.split())})" if why.strip() else ""
                    problems.append(
                        f"{tool}: {key} = {_shown(got)}, expected {_shown(want)}{because}"
                    )
        reason = "; ".join(problems) or f"all {total} expected argument value(s) passed"
        if self.options.judged and differing and not problems:
            reason += f" ({len(differing)} judged equivalent)"
        return {"Argument correctness": Scored(right / total if total else 0.0, reason)}


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _label(step: AgentStep | ExpectedStep) -> str:
    return f"{step.kind}:{_norm(step.name)}"


@register
class StepAlignment(Evaluator):
    """The agent's path against the expected one: completeness (which expected steps it took)
    and alignment (in the expected order, with nothing unexpected between them).

    >>> steps = [AgentStep(name="search_flights", arguments={"to": "Paris"}),
    ...          AgentStep(name="book_flight", arguments={"flight": "AF12"})]
    >>> expected = [ExpectedStep(name=n) for n in ("search_flights", "book_flight", "send_receipt")]
    >>> sample = Sample(question="Book me a flight to Paris", answer="Booked AF12.", steps=steps,
    ...                 expected_steps=expected)
    >>> for r in StepAlignment().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Step completeness: 0.67 - expected search_flights, book_flight, send_receipt; took
        search_flights, book_flight: missing send_receipt
    Step alignment: 0.67 - expected search_flights, book_flight, send_receipt; took
        search_flights, book_flight: in order, nothing between
    """

    name = "Step alignment & completeness"
    aliases = ("Step alignment", "Step alignment and completeness")
    description = "the agent took the expected_steps, in that order"
    inputs = frozenset({Input.EXPECTED_STEPS, Input.ANSWER})
    metrics = (
        MetricSpec(
            "Step completeness",
            "share of the expected steps the agent took",
            threshold=1.0,
            primary=True,
        ),
        MetricSpec(
            "Step alignment",
            "longest common subsequence of expected and taken steps / the longer of the two",
            threshold=0.75,
        ),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        expected = [_label(e) for e in sample.expected_steps]
        taken = [_label(s) for s in sample.steps]
        matched = sum((Counter(expected) & Counter(taken)).values())
        in_order = lcs_matched(expected, taken)
        names = ", ".join(s.name for s in sample.steps) or "no step"
        head = f"expected {', '.join(e.name for e in sample.expected_steps)}; took {names}"
        missing = list((Counter(expected) - Counter(taken)).elements())
        extra = list((Counter(taken) - Counter(expected)).elements())
        # Taken (counted in completeness) but not in the longest in-order match.
        out_of_order = list((Counter(expected) - Counter(missing)).elements())
        for k in sorted(in_order):
            out_of_order.remove(expected[k])
        detail = f": missing {_step_names(missing)}" if missing else ""
        order = [
            *([f"out of order {_step_names(out_of_order)}"] if out_of_order else []),
            *([f"extra {_step_names(extra)}"] if extra else []),
        ]
        return {
            "Step completeness": Scored(matched / len(expected), head + detail),
            "Step alignment": Scored(
                len(in_order) / max(len(expected), len(taken)),
                head + (": " + "; ".join(order) if order else ": in order, nothing between"),
            ),
        }


def _step_names(labels: Sequence[str]) -> str:
    return ", ".join(label.split(":", 1)[1] for label in labels)


class SanityOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_repeats: int = Field(
        default=2, ge=1, description="the same call (name and arguments) more often is a loop"
    )


@register
class AgentSanityCheck(Evaluator[SanityOptions]):
    """What is wrong with an agent's run whatever the case expected (a loop of identical
    calls, a failed or nameless step, no final answer): it needs no expectations, so it
    runs on every trace.

    >>> steps = [AgentStep(name="search_flights", arguments={"to": "Paris"}),
    ...          AgentStep(name="book_flight", failed=True, error="timeout")]
    >>> sample = Sample(question="Book me a flight to Paris", answer="Booked.", steps=steps)
    >>> for r in AgentSanityCheck().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Agent sanity: 0.00 - failed step: book_flight (timeout)
    """

    name = "Agent sanity check"
    aliases = ("Agent sanity", "Agent sanity check (H2O)")
    description = "no loop, no failed or nameless step, ends with an answer"
    inputs = frozenset({Input.STEPS})
    in_defaults = False  # only agent runs have steps: named, not defaulted
    metrics = (
        MetricSpec(
            "Agent sanity",
            "1 when the agent's steps show no loop, failure or empty step and it answered",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        problems = sanity_problems(sample.steps, sample.answer, self.options.max_repeats)
        if problems:
            return {"Agent sanity": Scored(0.0, "; ".join(problems))}
        return {"Agent sanity": Scored(1.0, f"{len(sample.steps)} step(s), no problem")}


def sanity_problems(steps: Sequence[AgentStep], answer: str | None, max_repeats: int) -> list[str]:
    """What is wrong with an agent's run, one line each (empty: nothing)."""
    problems = []
    repeats = Counter(s.signature() for s in steps)
    for step in steps:
        count = repeats.pop(step.signature(), 0)
        if count > max_repeats:
            problems.append(
                f"loop: {step.kind} {step.name} called {count} times with the same arguments"
            )
    failed = [s for s in steps if s.failed]
    for step in failed:
        problems.append(f"failed step: {step.name}" + (f" ({step.error})" if step.error else ""))
    if any(not s.name.strip() for s in steps):
        problems.append("a step without a name")
    if answer is None or not answer.strip():
        problems.append("no final answer")
    return problems
