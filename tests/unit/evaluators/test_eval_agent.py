"""Tool correctness and the agent sanity check, on the worked examples of their docstring."""

from __future__ import annotations

import pytest

from evalrunner.evaluators import Sample
from evalrunner.evaluators.agent import AgentSanityCheck, ToolCorrectness, lcs_length
from evalrunner.targets.steps import AgentStep


def sample(expected: list[str], called: list[str], **kwargs) -> Sample:
    steps = [AgentStep(name=n) for n in called]
    return Sample(question="q", answer="done", expected_tools=expected, steps=steps, **kwargs)


def test_the_wrong_tool_fails_and_names_both() -> None:
    (result,) = ToolCorrectness().evaluate(sample(["hr/get_balance"], ["hr/get_policy"]))
    assert (result.score, result.success) == (0.0, False)
    assert result.reason == (
        "expected hr/get_balance, called hr/get_policy: missing hr/get_balance; extra hr/get_policy"
    )


@pytest.mark.parametrize(
    ("options", "score"),
    [({}, 1.0), ({"order_sensitive": True}, 0.5), ({"exact": True}, 0.0)],
)
def test_the_docstrings_worked_example(options: dict, score: float) -> None:
    (result,) = ToolCorrectness(options=options).evaluate(
        sample(["search", "book"], ["book", "search", "search"])
    )
    assert result.score == score
    assert "extra search" in result.reason


def test_expected_tools_count_as_a_multiset_and_compare_case_insensitively() -> None:
    (twice,) = ToolCorrectness().evaluate(sample(["Search", "search"], ["SEARCH"]))
    assert twice.score == 0.5 and "missing search" in twice.reason
    (ok,) = ToolCorrectness().evaluate(sample(["Search"], [" search "]))
    assert ok.score == 1.0 and ok.success


def test_knowledge_base_lookups_are_not_tool_calls() -> None:
    steps = [AgentStep(kind="knowledge_base", name="lookup"), AgentStep(name="lookup")]
    s = Sample(question="q", answer="a", expected_tools=["lookup"], steps=steps)
    (result,) = ToolCorrectness(options={"exact": True}).evaluate(s)
    assert result.score == 1.0


def test_without_steps_the_reported_tool_label_is_used_and_without_expectations_it_skips() -> None:
    s = Sample(question="q", answer="a", expected_tools=["a", "b"], tool="a, b")
    assert ToolCorrectness().evaluate(s)[0].score == 1.0
    (skipped,) = ToolCorrectness().evaluate(Sample(question="q", answer="a", tool="a"))
    assert skipped.status == "skipped" and "expected_tools" in skipped.reason


def test_lcs() -> None:
    assert lcs_length(list("ABCBDAB"), list("BDCABA")) == 4
    assert lcs_length([], ["a"]) == 0


def test_a_sane_agent_passes() -> None:
    steps = [AgentStep(name="search", arguments={"q": "x"}), AgentStep(name="book")]
    s = Sample(question="q", answer="Booked.", steps=steps)
    (result,) = AgentSanityCheck().evaluate(s)
    assert (result.score, result.success, result.reason) == (1.0, True, "2 step(s), no problem")


def test_loops_failures_and_a_missing_answer_are_each_named() -> None:
    same = AgentStep(name="search", arguments={"q": "x"})
    steps = [same, same, same, AgentStep(name="book", failed=True, error="sold out")]
    s = Sample(question="q", answer=" ", steps=steps)
    (result,) = AgentSanityCheck().evaluate(s)
    assert result.score == 0.0 and not result.success
    assert result.reason == (
        "loop: tool search called 3 times with the same arguments; "
        "failed step: book (sold out); no final answer"
    )
    # the same tool with other arguments is progress, not a loop
    varied = [AgentStep(name="search", arguments={"q": str(i)}) for i in range(5)]
    ok = Sample(question="q", answer="a", steps=varied)
    assert AgentSanityCheck().evaluate(ok)[0].success
    assert AgentSanityCheck(options={"max_repeats": 3}).evaluate(s)[0].reason.startswith("failed")


def test_no_steps_is_skipped_not_failed() -> None:
    (result,) = AgentSanityCheck().evaluate(Sample(question="q", answer="a"))
    assert result.status == "skipped" and "no agent steps" in result.reason


def planned(expected: list, steps: list[AgentStep]) -> Sample:
    from evalrunner.targets.steps import ExpectedStep

    plan = [ExpectedStep(name=e) if isinstance(e, str) else ExpectedStep(**e) for e in expected]
    return Sample(question="q", answer="a", expected_steps=plan, steps=steps)


def test_argument_correctness_on_the_docstrings_example() -> None:
    from evalrunner.evaluators.agent import ArgumentCorrectness

    expected = [{"name": "book", "arguments": {"days": 2, "type": "annual"}}]
    called = [AgentStep(name="book", arguments={"days": 2, "type": " Sick", "note": "x"})]
    (result,) = ArgumentCorrectness().evaluate(planned(expected, called))
    assert result.score == 0.5 and not result.success
    assert result.reason == 'book: type = " Sick", expected "annual"'
    right = [AgentStep(name="Book", arguments={"days": 2, "type": "ANNUAL "})]
    assert ArgumentCorrectness().evaluate(planned(expected, right))[0].score == 1.0
    (never,) = ArgumentCorrectness().evaluate(planned(expected, [AgentStep(name="search")]))
    assert never.score == 0.0 and never.reason == "book was not called"


def test_argument_correctness_matches_repeated_calls_in_order_and_skips_without_arguments() -> None:
    from evalrunner.evaluators.agent import ArgumentCorrectness

    expected = [{"name": "get", "arguments": {"id": 1}}, {"name": "get", "arguments": {"id": 2}}]
    calls = [AgentStep(name="get", arguments={"id": 1}), AgentStep(name="get", arguments={"id": 3})]
    (result,) = ArgumentCorrectness().evaluate(planned(expected, calls))
    assert result.score == 0.5 and result.reason == "get: id = 3, expected 2"
    (skipped,) = ArgumentCorrectness().evaluate(planned(["get"], calls))
    assert skipped.status == "skipped"


def test_step_alignment_and_completeness_on_the_docstrings_example() -> None:
    from evalrunner.evaluators.agent import StepAlignment

    taken = [AgentStep(name="search"), AgentStep(name="search"), AgentStep(name="book")]
    completeness, alignment = StepAlignment().evaluate(planned(["search", "book"], taken))
    assert (completeness.metric, completeness.score) == ("Step completeness", 1.0)
    assert (alignment.metric, alignment.score) == ("Step alignment", pytest.approx(2 / 3))
    short = [AgentStep(name="search")]
    (incomplete, _) = StepAlignment().evaluate(planned(["search", "book"], short))
    assert incomplete.score == 0.5 and incomplete.reason.endswith("missing book")
