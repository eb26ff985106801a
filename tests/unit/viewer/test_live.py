"""A run in progress, as a local run leaves it in ``<out>/runs/<run_id>/`` (its resume.json
and one record per finished case): listed on the runs page, its finished cases on its live
page (polled), and, once its reports are written, a link to its own pages instead."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bs4 import BeautifulSoup
from starlette.testclient import TestClient

from evalrunner.evaluators.base import MetricResult
from evalrunner.run import CaseRecord
from evalrunner.targets.base import TargetResponse
from evalrunner.viewer.app import create_app
from evalrunner.viewer.live import SuiteQuestions
from evalrunner.viewer.source import LocalSource
from tests.support.viewer_runs import HOSTILE


def record(n: int, answer: str) -> CaseRecord:
    return CaseRecord(
        item_id=f"item-{n}",
        case_id=f"case-{n}",
        index=n,
        iteration=1,
        status="ok",
        response=TargetResponse(answer=answer),
        results=[
            MetricResult(
                evaluator="Rouge Metric",
                metric="ROUGE-L",
                status="scored",
                score=0.1,
                success=False,
                reason="low",
            )
        ],
    )


def test_a_run_in_progress_shows_its_finished_cases(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    cases = folder / "runs" / "260101-000000-abcdef" / "cases"
    cases.mkdir(parents=True)
    (cases.parent / "resume.json").write_text(
        json.dumps({"run_id": "260101-000000-abcdef", "suite": "s.csv", "started": "2026-01-01"})
    )
    for n, answer in enumerate(["first answer", f"bad {HOSTILE}"]):
        (cases / f"item-{n}.json").write_text(record(n, answer).model_dump_json())
    client = TestClient(create_app(LocalSource(folder)), base_url="http://127.0.0.1")

    box = BeautifulSoup(client.get("/live").text, "html.parser")
    assert [a.get_text() for a in box.select("a.live-link")] == ["260101-000000-abcdef"]
    assert "2 cases finished" in box.get_text()

    page = client.get("/live/260101-000000-abcdef")
    assert "<script>alert" not in page.text
    parsed = BeautifulSoup(page.text, "html.parser")
    rows = parsed.select("#live-cases tbody tr")
    assert [r.select("td")[0].get_text() for r in rows] == ["case-0", "case-1"]
    assert "ROUGE-L" in rows[0].get_text()
    assert parsed.select_one("#live-cases")["hx-trigger"] == "every 2s"

    # a third case finishes: the next poll shows it
    (cases / "item-2.json").write_text(record(2, "third").model_dump_json())
    again = BeautifulSoup(client.get("/live/260101-000000-abcdef/cases").text, "html.parser")
    assert len(again.select("tbody tr")) == 3
    assert client.get("/live/no-such-run").status_code == 404
    assert client.get("/live/..%2F..%2Fetc").status_code == 404


def test_a_finished_run_links_to_its_pages(runs_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    shutil.copytree(runs_folder, folder)
    summary = next(folder.glob("test-reports/evalrunner-demo-hr/*-summary.json"))
    run_id = json.loads(summary.read_text())["run_id"]
    cases = folder / "runs" / run_id / "cases"
    cases.mkdir(parents=True)
    (cases.parent / "resume.json").write_text(json.dumps({"run_id": run_id}))
    (cases / "item-0.json").write_text(record(0, "a").model_dump_json())
    client = TestClient(create_app(LocalSource(folder)), base_url="http://127.0.0.1")
    live = BeautifulSoup(client.get(f"/live/{run_id}/cases").text, "html.parser")
    assert live.select_one("#live-finished a")["href"] == f"/runs/{run_id}"
    assert not live.select_one("#live-cases").has_attr("hx-trigger")  # polling stops
    shutil.rmtree(folder / "runs")  # the run removes its folder once its reports are written
    gone = client.get(f"/live/{run_id}", follow_redirects=False)
    assert gone.status_code == 303 and gone.headers["location"] == f"/runs/{run_id}"


def test_run_view_shows_each_finished_case_question_from_the_suite_it_runs(
    tmp_path: Path,
) -> None:
    """``run --view`` gives the viewer its suite files: a record (case id and position only)
    is shown with the question of the suite's case at its position when the ids agree; a
    record whose id differs (a perturbed copy) shows none rather than another case's."""
    suite = tmp_path / "suite.csv"
    suite.write_text(
        "question,expected_answer\n"
        "How many leave days?,25\n"
        f'"Hostile {HOSTILE.replace(chr(34), chr(34) * 2)}",x\n'
        "Third question?,y\n",
        "utf-8",
    )
    folder = tmp_path / "out"
    cases = folder / "runs" / "260101-000000-abcdef" / "cases"
    cases.mkdir(parents=True)
    (cases.parent / "resume.json").write_text(json.dumps({"run_id": "260101-000000-abcdef"}))
    for n, case_id in enumerate(["case-0001", "case-0002", "case-0003~typo"]):
        finished = record(n, f"answer {n}").model_copy(update={"case_id": case_id})
        (cases / f"item-{n}.json").write_text(finished.model_dump_json())
    app = create_app(LocalSource(folder), questions=SuiteQuestions([suite]))
    page = TestClient(app, base_url="http://127.0.0.1").get("/live/260101-000000-abcdef")
    assert "<script>alert" not in page.text
    parsed = BeautifulSoup(page.text, "html.parser")
    assert [th.get_text() for th in parsed.select("#live-cases th")][:2] == ["Case", "Question"]
    shown = [td.get_text() for td in parsed.select("#live-cases td.live-question")]
    assert shown[0] == "How many leave days?"
    assert shown[1].startswith("Hostile ") and "<script>" in shown[1]  # as text, escaped
    assert shown[2] == ""

    without = TestClient(create_app(LocalSource(folder)), base_url="http://127.0.0.1")
    plain = BeautifulSoup(without.get("/live/260101-000000-abcdef").text, "html.parser")
    assert "Question" not in [th.get_text() for th in plain.select("#live-cases th")]
