"""JUnit XML and the Markdown CI summary: schema-valid, honest counts, inert run text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import xmlschema

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import CaseRow, Gate, MetricInfo, ReportData
from evalrunner.reports.summary import RunSummary
from evalrunner.reports.verdict import VerdictPolicy, decide
from evalrunner.reports.writers.junit import junit_xml
from evalrunner.reports.writers.markdown import markdown_summary, md_text
from tests.support.summaries import metric, run_summary

XSD = Path(__file__).parents[2] / "data" / "junit-10.xsd"
SNAPSHOT = Path(__file__).parent / "data" / "ci_summary.md"
HOSTILE = "bad\x01answer </failure><x> & ]]> \ud800"


def result(metric_name: str, status: Any = "scored", **fields: Any) -> MetricResult:
    fields.setdefault("reason", "why")
    return MetricResult(evaluator=metric_name, metric=metric_name, status=status, **fields)


def report_data() -> ReportData:
    metrics = [
        MetricInfo(
            metric="ROUGE-L", evaluator="Rouge", primary=True, threshold=0.5, higher_is_better=True
        ),
        MetricInfo(
            metric="ROUGE-1", evaluator="Rouge", primary=False, threshold=0.5, higher_is_better=True
        ),
        MetricInfo(
            metric="Toxicity",
            evaluator="Toxicity",
            primary=True,
            threshold=0.3,
            higher_is_better=False,
        ),
        MetricInfo(
            metric="BLEU-4", evaluator="BLEU", primary=False, threshold=0.2, higher_is_better=True
        ),
    ]
    rows = [
        CaseRow(
            case_id="c1",
            iteration=1,
            question="q1",
            status="ok",
            latency_ms=1500,
            results=[
                result("ROUGE-L", score=0.9, success=True),
                result("ROUGE-1", score=0.1, success=False),
                result("Toxicity", score=0.0, success=True),
                result("BLEU-4", score=0.1, success=False),
            ],
        ),
        CaseRow(
            case_id="c2",
            iteration=1,
            question="q2",
            status="ok",
            results=[
                result("ROUGE-L", score=0.2, success=False, threshold=0.5, reason=HOSTILE),
                result("Toxicity", status="skipped", reason="no answer text"),
                result("BLEU-4", status="error", reason="tokenizer broke"),
            ],
        ),
        CaseRow(
            case_id="c3",
            iteration=1,
            question="q3",
            status="target_error",
            error="HTTP 500 from target",
        ),
    ]
    return ReportData(
        run_id="261122-100000-abc123",
        target="prod-rag",
        target_kind="url",
        suite="test-suites/hr.xlsx",
        started_at="2026-11-22T10:00:00+00:00",
        finished_at="2026-11-22T10:01:00+00:00",
        iterations=1,
        config={},
        metrics=metrics,
        stats=[],
        rows=rows,
        gates=[
            Gate(metric="BLEU-4", gate="BLEU-4", threshold=0.3, average=0.1, passed=False),
            Gate(metric="ROUGE-L", gate="ROUGE-L", threshold=0.4, average=0.55, passed=True),
        ],
    )


def test_junit_validates_against_the_jenkins_junit_schema():
    document = junit_xml([(report_data(), run_summary())])
    xmlschema.XMLSchema(XSD).validate(document.decode("utf-8"))


def test_junit_has_one_testcase_per_case_and_gated_metric_and_per_gate():
    root = ET.fromstring(junit_xml([(report_data(), run_summary())]))
    suite = root.find("testsuite")
    assert suite is not None
    names = [c.get("name") for c in suite.iter("testcase")]
    # primary metrics (ROUGE-L, Toxicity) and the gated BLEU-4; never the secondary ROUGE-1
    assert names == [
        "c1 · ROUGE-L",
        "c1 · Toxicity",
        "c1 · BLEU-4",
        "c2 · ROUGE-L",
        "c2 · Toxicity",
        "c2 · BLEU-4",
        "c3 · ROUGE-L",
        "c3 · Toxicity",
        "c3 · BLEU-4",
        "gate BLEU-4",
        "gate ROUGE-L",
        "run verdict",
    ]
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases["c1 · ROUGE-L"]) == []  # a pass has no child
    assert cases["c1 · ROUGE-L"].get("time") == "1.500"
    bleu = cases["c1 · BLEU-4"].find("failure")
    assert bleu is not None and bleu.get("message") == "0.1000, needs >= 0.2: why"
    rouge = cases["c2 · ROUGE-L"].find("failure")
    assert rouge is not None and rouge.get("type") == "below_threshold"
    assert "</failure><x> & ]]>" in rouge.get("message", "")  # escaped, read back intact
    assert "\x01" not in rouge.get("message", "")
    assert cases["c2 · Toxicity"].find("skipped").get("message") == "no answer text"
    assert cases["c2 · BLEU-4"].find("error").get("type") == "evaluator_error"
    assert cases["c3 · Toxicity"].find("error").get("message") == "HTTP 500 from target"
    gate = cases["gate BLEU-4"].find("failure")
    assert gate is not None and gate.get("message") == "BLEU-4 average 0.1000, gate >= 0.3"
    assert cases["gate ROUGE-L"].find("failure") is None
    assert cases["run verdict"].find("failure") is None  # the summary's verdict: passed
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("12", "3", "4")
    assert suite.get("skipped") == "1"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("12", "3", "4")


def ci_summary():
    return run_summary(
        target="prod-rag",
        iterations=2,
        items=6,
        cases=3,
        answered=5,
        target_errors=1,
        metrics=[
            metric("ROUGE-L", average=0.41234, pass_rate=0.4, count=5, skipped=0, errored=0),
            metric("ROUGE-1", primary=False, average=0.5, pass_rate=0.6, count=5),
            metric(
                "Toxicity",
                higher_is_better=False,
                threshold=0.3,
                average=None,
                count=0,
                skipped=5,
                pass_rate=None,
            ),
        ],
        gates=[
            {
                "metric": "ROUGE-L",
                "gate": "ROUGE-L",
                "threshold": 0.5,
                "average": 0.41234,
                "passed": False,
            },
            {
                "metric": "Toxicity",
                "gate": "Toxicity",
                "threshold": 0.3,
                "average": None,
                "passed": True,
                "higher_is_better": False,
            },
        ],
        gates_passed=False,
        regression={
            "verdict": "regression",
            "baseline_run_id": "261121-090000-aaa111",
            "baseline_started_at": "2026-11-21T09:00:00+00:00",
            "reasons": [
                "ROUGE-L fell from 0.62 to 0.41 (95% CI -0.3 to -0.1)",
                "2 cases passed before and fail now: c1, c2",
            ],
            "new_failures": 2,
        },
        problems=[
            {
                "severity": "high",
                "type": "regression",
                "description": "a regression",
                "suggested_action": "look",
                "affected_count": 2,
            },
            {
                "severity": "medium",
                "type": "target_errors",
                "description": "c3 failed: | injected | cell\n# heading [link](http://x) <b>x</b>",
                "suggested_action": "fix",
                "affected_count": 1,
            },
        ],
    )


def regressed_summary() -> RunSummary:
    """The CI summary as a run under ``--fail-on-regression`` that tolerates 20% errors
    decides it (Aggregate's verdict, made from the same figures)."""
    s = ci_summary()
    assert s.regression is not None
    s.verdict = decide(
        items=s.items,
        answered=s.answered_runs(),
        stats=s.metrics,
        gates=s.gates,
        regressed=s.regressed,
        regression_reasons=s.regression.reasons,
        baseline_run_id=s.regression.baseline_run_id,
        policy=VerdictPolicy(fail_on_regression=True, max_error_share=0.2),
    )
    return s


def test_markdown_summary_snapshot():
    text = markdown_summary([regressed_summary()])
    if not SNAPSHOT.exists():  # never a vacuous pass: write it for review, and fail
        SNAPSHOT.write_text(text, encoding="utf-8")
        pytest.fail(f"no snapshot: wrote {SNAPSHOT}; review it and commit it")
    assert text == SNAPSHOT.read_text(encoding="utf-8")


def test_markdown_run_text_cannot_add_cells_links_or_lines():
    text = markdown_summary([ci_summary()])
    problem = next(line for line in text.splitlines() if "injected" in line)
    assert problem.startswith("- **medium** ")
    assert "\\| injected \\| cell" in problem  # no new table cell
    assert "\\[link\\](http://x)" in problem  # no link
    assert "&lt;b&gt;" in problem  # no HTML
    assert "# heading" in problem  # the line break folded: no heading of its own


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ""),
        ("plain text 0.5", "plain text 0.5"),
        ("- starts a list", "\\- starts a list"),
        ("a*b*_c_`d`", "a\\*b\\*\\_c\\_\\`d\\`"),
        ("line\r\n\n  two", "line two"),
        ("x\x00y", "x\ufffdy"),
    ],
)
def test_md_text(value, expected):
    assert md_text(value) == expected


def test_passing_run_says_passed_and_has_no_gate_table():
    text = markdown_summary([run_summary(metrics=[metric("ROUGE-L", average=0.9, count=2)])])
    assert text.startswith("## evalrunner: ✅ PASSED: prod-rag on test-suites/hr.xlsx\n")
    assert "### Gates" not in text and "### Regression" not in text
    assert "| ROUGE-L | 0.9 |" in text


def test_junit_gives_a_conversation_its_metrics_and_each_turn_its_own():
    """A conversation's row carries the conversation metrics and its turns the per-turn ones:
    JUnit lists each where it applies, with no "not evaluated" skips for the others."""
    metrics = [
        MetricInfo(
            metric="Knowledge retention",
            evaluator="Knowledge retention",
            primary=True,
            threshold=1.0,
            higher_is_better=True,
        ),
        MetricInfo(
            metric="ROUGE-L", evaluator="Rouge", primary=True, threshold=0.5, higher_is_better=True
        ),
    ]
    turn = {"conversation_id": "city", "iteration": 1, "status": "ok"}
    rows = [
        CaseRow(
            case_id="city",
            question="I live in Paris. / Where do I live?",
            results=[result("Knowledge retention", score=0.5, success=False)],
            **turn,
        ),
        CaseRow(
            case_id="city#1",
            question="I live in Paris.",
            turn=1,
            results=[result("ROUGE-L", score=0.9, success=True)],
            **turn,
        ),
        CaseRow(
            case_id="city#2",
            question="Where do I live?",
            turn=2,
            results=[result("ROUGE-L", score=0.1, success=False)],
            **turn,
        ),
    ]
    data = report_data().model_copy(update={"metrics": metrics, "rows": rows, "gates": []})
    suite = ET.fromstring(junit_xml([(data, run_summary())])).find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert list(cases) == [
        "city · Knowledge retention",
        "city#1 · ROUGE-L",
        "city#2 · ROUGE-L",
        "run verdict",
    ]
    assert cases["city · Knowledge retention"].find("failure") is not None
    assert cases["city#2 · ROUGE-L"].find("failure") is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "2", "0")
