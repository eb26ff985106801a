"""The Conversations section of report.html: each conversation with its turns in order and
their verdicts, then its conversation metrics; failing conversations first; run text
escaped; no section in a run without conversations."""

from __future__ import annotations

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import CaseRow, MetricInfo
from evalrunner.reports.views.html import render_report
from tests.unit.reports.test_report_html import FAITH, dom, good, make_report, scored

WHOLE = MetricInfo(
    metric="Knowledge retention", evaluator="Knowledge retention", primary=True, threshold=0.5,
    higher_is_better=True,
)  # fmt: skip


def conversation(cid: str, remembered: bool) -> list[CaseRow]:
    reason = "kept the name" if remembered else "forgot the <b>name</b> given in turn 1"
    whole = CaseRow(
        case_id=cid,
        iteration=1,
        question="My name is Ana.",
        answer="user: ...",
        status="ok",
        conversation_id=cid,
        results=[scored(WHOLE, 1.0 if remembered else 0.0, reason)],
    )
    first = CaseRow(
        case_id=f"{cid}#1",
        iteration=1,
        question="My name is Ana.",
        answer="Nice to meet you.",
        status="ok",
        conversation_id=cid,
        turn=1,
    )
    second = CaseRow(
        case_id=f"{cid}#2",
        iteration=1,
        question="What is my name?",
        expected_answer="Ana",
        answer="You are Ana." if remembered else "I do not <i>know</i>.",
        status="ok",
        conversation_id=cid,
        turn=2,
        results=[scored(FAITH, 0.9 if remembered else 0.1, "turn verdict")],
    )
    return [whole, first, second]


def not_run(cid: str) -> list[CaseRow]:
    whole = CaseRow(
        case_id=cid,
        iteration=1,
        question="hi",
        status="target_error",
        error="turn 1 of 2: HTTP 500",
        conversation_id=cid,
        results=[
            MetricResult(
                evaluator=WHOLE.evaluator, metric=WHOLE.metric, status="error", reason="not scored"
            )
        ],
    )
    turns = [
        CaseRow(case_id=f"{cid}#1", iteration=1, question="hi", status="target_error",
                error="HTTP 500", conversation_id=cid, turn=1),
        CaseRow(case_id=f"{cid}#2", iteration=1, question="and?", status="not_run",
                error="not run: turn 1 failed, which ended the conversation",
                conversation_id=cid, turn=2),
    ]  # fmt: skip
    return [whole, *turns]


def test_conversations_show_turns_then_conversation_metrics_failing_first() -> None:
    rows = [good("single", 1), *conversation("kept", True), *conversation("lost", False)]
    rows += not_run("broken")
    tree = dom(render_report(make_report(rows=rows, metrics=[FAITH, WHOLE])))
    toc = [a.attrs["href"] for a in tree.find("nav", class_="toc").find_all("a")]
    assert "#conversations" in toc
    section = tree.find("section", id="conversations")
    articles = section.find_all("article", class_="conversation")
    assert [a.find("code").text for a in articles] == ["lost", "broken", "kept"]
    lost = articles[0]
    turns = lost.find_all("li", class_="turn")
    assert [t.attrs["value"] for t in turns] == ["1", "2"]
    assert "What is my name?" in turns[1].text and "I do not <i>know</i>." in turns[1].text
    assert "turn verdict" in turns[1].text and "fail" in turns[1].text
    metrics = lost.find_all("table")[-1]
    assert "Knowledge retention" in metrics.text
    assert "forgot the <b>name</b> given in turn 1" in metrics.text  # escaped, shown as text
    assert lost.find("b") is None and lost.find("i") is None
    broken = articles[1]
    assert "turn 1 of 2: HTTP 500" in broken.text
    assert "not run: turn 1 failed" in broken.find_all("li", class_="turn")[1].text


def test_no_conversations_section_without_conversations() -> None:
    tree = dom(render_report(make_report()))
    assert tree.find("section", id="conversations") is None
