"""An agent target through the embedded engine: its steps reach the record and report.json,
Tool correctness names the wrong tool, the sanity check catches a loop, no judge needed; and
report.html's Agent steps section shows each trace beside the expected steps."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag

from evalrunner.engine import LocalEngine
from lambdas.local import local_pipeline

SUITE = (
    "id,question,expected_tools,expected_steps\n"
    'balance,How many days do I have left?,"[""hr/get_balance""]",\n'
    'policy,What is the leave policy?,"[""kb/search""]",'
    '"[{""name"": ""kb/search"", ""arguments"": {""q"": ""Leave""}}]"\n'
    'loop,Book my leave,"[""hr/book""]",'
    '"[{""name"": ""hr/book"", ""arguments"": {""days"": 3}}]"\n'
    'escape,Escape this,"[""kb/search""]",\n'
)


def agent(event, context):
    """An agent that picks the wrong tool for balances and loops when booking."""
    question = event["question"]
    if "left" in question:
        steps = [{"name": "hr/get_policy", "args": {"topic": "leave"}}]
    elif "policy" in question:
        steps = [{"name": "kb/search", "args": {"q": "leave"}, "output": "25 days"}]
    elif "Escape" in question:
        steps = [{"name": "kb/search", "output": "<script>alert(1)</script>"}]
    else:
        steps = [{"name": "hr/book", "args": {"days": 2}, "error": "timeout"}] * 3
    return {"reply": "Done.", "trace": steps}


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Any:
    event = {
        "key": "test-suites/agent.csv",
        "iterations": 1,
        "target": {"lambdaArn": "hr-agent", "answer_path": "reply", "steps_path": "trace"},
        "metrics": [
            "Tool correctness",
            "Agent sanity check",
            "Argument correctness",
            "Step alignment & completeness",
        ],
    }
    engine = LocalEngine(pipeline=local_pipeline, extra_functions={"hr-agent": agent})
    return engine.run(event, suite=SUITE.encode(), out_dir=tmp_path_factory.mktemp("agent"))


def test_an_agents_steps_are_scored_without_a_judge(result: Any) -> None:
    rows = {
        r["case_id"]: r
        for r in csv.DictReader(
            io.StringIO(
                next(f for f in result.files if f.name.endswith("details.csv")).read_text(
                    "utf-8-sig"
                )
            )
        )
    }
    assert rows["policy"]["Tool correctness success"] == "true"
    assert rows["balance"]["Tool correctness success"] == "false"
    assert rows["balance"]["Tool correctness reason"] == (
        "expected hr/get_balance, called hr/get_policy: missing hr/get_balance; extra hr/get_policy"
    )
    assert rows["loop"]["Agent sanity success"] == "false"
    assert "loop: tool hr/book called 3 times" in rows["loop"]["Agent sanity reason"]
    assert "failed step: hr/book (timeout)" in rows["loop"]["Agent sanity reason"]
    assert rows["policy"]["Argument correctness score"] == "1.0000"
    assert rows["loop"]["Argument correctness reason"] == "hr/book: days = 2, expected 3"
    assert rows["balance"]["Argument correctness reason"].startswith("skipped: ")
    report = json.loads(next(f for f in result.files if f.name.endswith("report.json")).read_text())
    by_case = {r["case_id"]: r for r in report["rows"]}
    assert by_case["balance"]["steps"][0]["name"] == "hr/get_policy"
    assert by_case["policy"]["steps"] == [
        {
            "kind": "tool",
            "name": "kb/search",
            "arguments": {"q": "leave"},
            "output": "25 days",
            "failed": False,
            "error": None,
        }
    ]


def _report(result: Any) -> BeautifulSoup:
    html: Path = next(f for f in result.files if f.name.endswith("report.html"))
    return BeautifulSoup(html.read_text("utf-8"), "html.parser")


def _steps(case: Tag, side: str) -> list[tuple[str, str, str]]:
    listed = case.select(f"div.{side} ol.steps li.step")
    return [(str(li["data-kind"]), str(li["data-name"]), str(li["data-mark"])) for li in listed]


def test_report_html_shows_each_trace_beside_the_expected_steps(result: Any) -> None:
    page = _report(result)
    section = page.find("section", id="agent-steps")
    assert isinstance(section, Tag)
    assert page.select_one('nav.toc a[href="#agent-steps"]') is not None
    cases = {str(d["data-case"]): d for d in section.select("details.agent-case")}
    # Failing cases first (and open), the passing ones after, in suite order within each.
    assert list(cases) == ["balance", "loop", "policy", "escape"]
    assert [c.has_attr("open") for c in cases.values()] == [True, True, False, False]

    balance = cases["balance"]
    assert _steps(balance, "taken") == [("tool", "hr/get_policy", "extra")]
    assert _steps(balance, "expected") == [("tool", "hr/get_balance", "missing")]
    taken = balance.select_one("div.taken li.step")
    assert taken is not None and '{"topic": "leave"}' in taken.get_text()
    verdicts = {
        tr.find_all("td")[0].get_text(strip=True): [
            td.get_text(" ", strip=True) for td in tr.find_all("td")
        ]
        for tr in balance.select("table.verdicts tbody tr")
    }
    assert verdicts["Tool correctness"][2] == "fail"
    assert "missing hr/get_balance; extra hr/get_policy" in verdicts["Tool correctness"][3]

    loop = cases["loop"]
    assert (
        _steps(loop, "taken")
        == [("tool", "hr/book", "matched")] + [("tool", "hr/book", "extra")] * 2
    )
    failed = loop.select("div.taken li.step.failed")
    assert len(failed) == 3 and all(
        "timeout" in li.select_one("div.error").get_text() for li in failed
    )
    expected = loop.select_one("div.expected li.step")
    assert expected is not None and '{"days": 3}' in expected.get_text()
    assert "Step alignment" in {
        tr.td.get_text(strip=True) for tr in loop.select("table.verdicts tbody tr")
    }

    policy = cases["policy"]
    assert _steps(policy, "expected") == [("tool", "kb/search", "matched")]
    assert "25 days" in policy.select_one("div.taken div.out").get_text()
    assert "Done." in policy.select_one("div.answer").get_text()


def test_a_step_output_is_shown_as_text_not_markup(result: Any) -> None:
    page = _report(result)
    escape = page.select_one('details.agent-case[data-case="escape"]')
    assert escape is not None and escape.find("script") is None
    assert "<script>alert(1)</script>" in escape.select_one("div.taken div.out").get_text()
