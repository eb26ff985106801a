"""The matrix summary: one table per cell from each cell's verdict, the worst exit code,
and a page that escapes what it shows."""

from __future__ import annotations

import json

from bs4 import BeautifulSoup

from evalrunner.project.matrix import CellMetric, CellSummary, MatrixSummary, write_matrix
from evalrunner.reports.model import Gate


def cell(target: str, code: int, reason: str = "") -> CellSummary:
    return CellSummary(
        target=target,
        suite="hr",
        folder=f"{target}/hr",
        outcome="passed" if code == 0 else "failed",
        headline="PASSED" if code == 0 else "FAILED",
        exit_code=code,
        reasons=[reason] if reason else [],
        report=f"{target}/hr/test-reports/{target}/x-report.html",
        metrics=[
            CellMetric(
                metric="Token F1", average=0.8, pass_rate=0.5, threshold=0.75, higher_is_better=True
            )
        ],
        gates=[Gate(metric="Token F1", gate="Token F1", threshold=0.9, average=0.8, passed=False)],
    )


def test_the_exit_code_is_the_worst_cells(tmp_path):
    matrix = MatrixSummary.of_cells(tmp_path, [cell("a", 0), cell("b", 4), cell("c", 1)])
    assert matrix.exit_code == 4
    failed = CellSummary.failed("d", "hr", "d/hr", "the execution failed")
    assert MatrixSummary.of_cells(tmp_path, [cell("a", 0), failed]).exit_code == 3


def test_the_page_and_the_json_say_the_same_and_escape_run_text(tmp_path):
    hostile = "<script>alert(1)</script> below the threshold"
    matrix = MatrixSummary.of_cells(tmp_path, [cell("prod", 0), cell("staging", 1, hostile)])
    html_path, json_path = write_matrix(matrix, tmp_path / "out")
    data = json.loads(json_path.read_text("utf-8"))
    assert [c["exit_code"] for c in data["cells"]] == [0, 1] and data["exit_code"] == 1
    page = html_path.read_text("utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    soup = BeautifulSoup(page, "html.parser")
    sections = soup.select("section.cell")
    assert [s.h2.get_text(" ", strip=True) for s in sections] == [
        "prod × hr PASSED",
        "staging × hr FAILED",
    ]
    rows = [
        [td.get_text(strip=True) for td in tr.find_all("td")] for tr in sections[1].find_all("tr")
    ]
    assert ["Token F1", "0.800", "50%", "≥ 0.750"] in rows
    assert ["Token F1", "0.800", "≥ 0.900", "FAIL"] in rows
    link = sections[0].find("a")
    assert link["href"] == "prod/hr/test-reports/prod/x-report.html"
