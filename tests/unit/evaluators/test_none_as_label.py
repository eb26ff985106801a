"""Issue 32 item 6 (c): with ``none_as_label``, a case that expects no tool is scored (1 when
none was used, 0 when one was) and "(none)" joins the confusion matrix; without it, skipped."""

from __future__ import annotations

from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.classification import ToolChoice

CASES = [
    Sample(question="Hello!"),  # no tool expected, none used
    Sample(question="Hi", tool="search_policies"),  # no tool expected, one used
    Sample(question="Leave?", tool="search_policies", expected_tool="search_policies"),
]


def test_without_the_option_a_case_expecting_no_tool_is_skipped() -> None:
    (result,) = ToolChoice().evaluate(CASES[0])
    assert result.status == "skipped" and "none_as_label" in result.reason


def test_with_the_option_none_is_a_label() -> None:
    tool = ToolChoice(options={"none_as_label": True})
    results = [tool.evaluate(s) for s in CASES]
    assert [(r.score, r.reason) for (r,) in results] == [
        (1.0, "no tool expected and none reported"),
        (0.0, "tool 'search_policies', expected none"),
        (1.0, "tool 'search_policies' as expected"),
    ]
    summary = tool.summarize(CASES, results)
    assert summary is not None
    assert summary["accuracy"] == 2 / 3
    assert summary["confusion_matrix"]["(none)"] == {"(none)": 1, "search_policies": 1}
