"""The viewer's routes as a browser calls them (Starlette's TestClient): the pages show what
the report models hold, every run text is escaped, nothing outside the served folder can be
reached, writes need the page's token, and only loopback Host names are answered."""

from __future__ import annotations

import io
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from starlette.testclient import TestClient

from evalrunner.reports.model import ReportData
from evalrunner.viewer.app import CSP, create_app
from evalrunner.viewer.source import LocalSource
from tests.support.viewer_runs import HOSTILE

TOKEN = "test-token-0123456789"


@pytest.fixture
def folder(runs_folder: Path, tmp_path: Path) -> Path:
    """A private copy (label tests write into it)."""
    copy = tmp_path / "out"
    shutil.copytree(runs_folder, copy)
    return copy


@pytest.fixture
def client(folder: Path) -> TestClient:
    return TestClient(create_app(LocalSource(folder), token=TOKEN), base_url="http://127.0.0.1")


def demo_ids(folder: Path) -> list[str]:
    """The two demo runs' ids, oldest first."""
    reports = sorted(folder.glob("test-reports/evalrunner-demo-hr/*-report.json"))
    return [ReportData.model_validate_json(p.read_bytes()).run_id for p in reports]


def soup(text: str) -> BeautifulSoup:
    return BeautifulSoup(text, "html.parser")


def test_runs_page_lists_every_run_with_verdict_and_filters(
    client: TestClient, folder: Path
) -> None:
    page = client.get("/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    rows = soup(page.text).select("table#runs tbody tr")
    assert len(rows) == 5  # two demo runs, the hostile copy, the big run, the rich run
    old, new = demo_ids(folder)
    text = {r.select_one("a.run-link").get_text(): r.get_text(" ") for r in rows}
    assert "REGRESSED" in text[new] or "FAILED" in text[new]
    assert "evalrunner-demo-hr" in text[old] and "test-suites/demo-hr.xlsx" in text[old]
    assert "ROUGE-L" in text[old]
    filtered = soup(client.get("/", params={"target": "evalrunner-demo-hr"}).text)
    assert len(filtered.select("table#runs tbody tr")) == 2
    dated = soup(client.get("/", params={"until": "2024-01-01"}).text)
    assert [a.get_text() for a in dated.select("a.run-link")] == ["hostile-run"]
    outcome = soup(page.text).select("table#runs tbody tr span.verdict")[0].get_text()
    verdict = soup(client.get("/", params={"verdict": outcome}).text)
    kept = verdict.select("table#runs tbody tr span.verdict")
    assert kept and {s.get_text() for s in kept} == {outcome}
    assert soup(page.text).select("section#trends svg polyline")


def test_run_page_verdict_and_problems_before_the_cases(client: TestClient, folder: Path) -> None:
    _, new = demo_ids(folder)
    page = soup(client.get(f"/runs/{new}").text)
    order = [s["id"] for s in page.select("main section[id]")]
    assert order.index("verdict") < order.index("problems") < order.index("cases")
    assert page.select_one("#verdict .verdict").get_text() in ("REGRESSED", "FAILED")
    assert page.select("#problems li")


def test_case_table_filters_sorts_and_pages_on_the_server(client: TestClient) -> None:
    run = "big-1200-240102-000000"
    client.headers["HX-Request"] = "true"  # the table alone, as htmx asks for it
    whole = soup(client.get(f"/runs/{run}/cases", headers={"HX-Request": ""}).text)
    assert whole.select_one("#verdict") and whole.select_one("#case-table table.cases")
    first = soup(client.get(f"/runs/{run}/cases").text)
    assert len(first.select("table.cases tbody tr")) == 50
    assert "1200 of 1200" in first.select_one("#case-count").get_text()
    last = soup(client.get(f"/runs/{run}/cases", params={"page": 24}).text)
    assert [a.get_text() for a in last.select("a.case-link")][-1] == "case-01199"
    failing = soup(client.get(f"/runs/{run}/cases", params={"metric": "ROUGE-L"}).text)
    count = int(failing.select_one("#case-count").get_text().split()[0])
    assert 0 < count < 1200
    data = client.app.state.viewer.store.report(run).full()
    expected = sum(1 for r in data.rows if (x := r.result("ROUGE-L")) and x.success is False)
    assert count == expected
    by_score = soup(
        client.get(
            f"/runs/{run}/cases", params={"sort": "ROUGE-L", "order": "desc", "size": 500}
        ).text
    )
    column = [th.get_text() for th in by_score.select("table.cases thead th")].index("ROUGE-L")
    scores = [
        float(tr.select("td")[column].get_text())
        for tr in by_score.select("table.cases tbody tr")
        if tr.select("td")[column].get_text() not in ("", "—")
    ]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    search = soup(client.get(f"/runs/{run}/cases", params={"q": "case-00007"}).text)
    assert [a.get_text() for a in search.select("a.case-link")] == ["case-00007"]
    category = data.rows[0].categories[0]
    in_category = soup(client.get(f"/runs/{run}/cases", params={"category": category}).text)
    want = sum(1 for r in data.rows if category in r.categories)
    assert f"{want} of 1200" in in_category.select_one("#case-count").get_text()


def test_case_page_shows_the_evaluation_eye(client: TestClient, folder: Path) -> None:
    old, _ = demo_ids(folder)
    page = soup(client.get(f"/runs/{old}/cases/0").text)
    assert page.select_one("#question").get_text().count("annual leave")
    assert page.select("#answer span.sent.s-supported")  # the demo's first answer is grounded
    assert page.select("#contexts mark")
    rows = page.select("#scores tbody tr")
    assert any("ROUGE-L" in r.get_text() for r in rows)
    assert all(len(r.select("td")) == 5 for r in rows)
    assert page.select("#labels form.label-form input[name=token]")


def test_every_run_text_is_escaped(client: TestClient) -> None:
    for url in ("/", "/runs/hostile-run", "/runs/hostile-run/cases/0"):
        html = client.get(url).text
        assert "<script>alert" not in html and "<img src=x" not in html, url
        parsed = soup(html)
        assert not parsed.select("img"), url
        assert all(s.get("src") == "/static/htmx.min.js" for s in parsed.select("script")), url
    case = soup(client.get("/runs/hostile-run/cases/0").text)
    assert HOSTILE in case.select_one("#question").get_text()
    assert HOSTILE in case.select_one("#scores").get_text()
    assert HOSTILE in case.select_one("#contexts").get_text()


@pytest.mark.parametrize(
    "url",
    [
        "/runs/..%2F..%2Fetc%2Fpasswd",
        "/runs/%2E%2E/cases/0",
        "/runs/../../etc/passwd",
        "/static/..%2F..%2Fviewer%2Fapp.py",
        "/static/../app.py",
        "/runs/nope/export.zip",
        "/compare?a=..%2F..&b=x",
    ],
)
def test_paths_cannot_leave_the_served_folder(client: TestClient, url: str) -> None:
    answer = client.get(url)
    assert answer.status_code in (400, 404), url
    assert "root:" not in answer.text and "def create_app" not in answer.text


def test_source_refuses_keys_outside_its_folder(folder: Path, tmp_path: Path) -> None:
    from evalrunner.viewer.source import UnsafeKey

    (tmp_path / "secret.txt").write_text("secret", "utf-8")
    source = LocalSource(folder)
    for key in ("../secret.txt", "/etc/passwd", "a/../../secret.txt", "..\\secret.txt", ""):
        with pytest.raises(UnsafeKey):
            source.read(key)
    (folder / "link").symlink_to(tmp_path)
    with pytest.raises(UnsafeKey):
        source.read("link/secret.txt")
    for key in ("C:/secret.txt", "c:secret.txt"):
        with pytest.raises(UnsafeKey):
            source.read(key)
    # a colon inside a name is no way out: a target named llama3:8b has that folder
    (folder / "test-reports" / "llama3:8b").mkdir()
    (folder / "test-reports" / "llama3:8b" / "x.json").write_text("{}", "utf-8")
    assert source.read("test-reports/llama3:8b/x.json") == b"{}"


def test_only_loopback_host_names_are_answered(folder: Path) -> None:
    rebinding = TestClient(create_app(LocalSource(folder)), base_url="http://evil.example")
    assert rebinding.get("/").status_code == 400


def label(client: TestClient, run: str, token: str, **fields: str) -> int:
    form = {"token": token, "n": "0", "metric": "ROUGE-L", "verdict": "fail", "note": ""}
    form.update(fields)
    answer = client.post(f"/runs/{run}/labels", data=form, follow_redirects=False)
    return answer.status_code


def test_labels_need_the_token_and_are_stored_for_calibrate(
    client: TestClient, folder: Path
) -> None:
    old, _ = demo_ids(folder)
    stored = sorted(folder.glob("test-reports/evalrunner-demo-hr/*-labels.csv"))
    assert not stored
    assert client.get(f"/runs/{old}/calibration").status_code == 404
    assert label(client, old, "wrong") == 403
    assert label(client, old, "") == 403
    assert not list(folder.glob("test-reports/*/*-labels.csv"))
    assert label(client, old, TOKEN, note="judge too strict <b>") == 303
    assert label(client, old, TOKEN, n="1", verdict="pass") == 303
    assert label(client, old, TOKEN, n="2", verdict="pass") == 303
    assert label(client, old, TOKEN, n="1", verdict="fail") == 303  # replaces, not adds
    assert label(client, old, TOKEN, metric="no such metric") == 400
    assert label(client, old, TOKEN, n="99999") == 400
    (labels,) = folder.glob("test-reports/evalrunner-demo-hr/*-labels.csv")
    text = labels.read_text("utf-8")
    assert text.splitlines()[0] == "case_id,iteration,human_verdict ROUGE-L,note ROUGE-L"
    assert len(text.splitlines()) == 4
    assert "judge too strict <b>" in text
    # the file is what calibrate reads, beside the run's details.csv
    from evalrunner.calibrate.labels import read_labelled_run

    details = labels.with_name(labels.name.replace("labels.csv", "details.csv"))
    rouge = next(m for m in read_labelled_run(details, labels) if m.metric == "ROUGE-L")
    assert [(r.iteration, r.human) for r in rouge.rows] == [(1, False), (1, False), (1, True)]
    # the run page shows the agreement per labelled metric
    page = soup(client.get(f"/runs/{old}").text)
    cells = [td.get_text() for td in page.select("#agreement table tbody tr td")]
    assert cells[:2] == ["ROUGE-L", "3"]
    case = soup(client.get(f"/runs/{old}/cases/0").text)
    # calibration one click away: calibrate's own page on these labels
    calibration = client.get(f"/runs/{old}/calibration")
    assert calibration.status_code == 200
    assert "default-src 'none'" in calibration.headers["content-security-policy"]
    table = soup(calibration.text).get_text(" ")
    assert "ROUGE-L" in table and "judge too strict" not in table
    assert case.select_one("#calibrate")["href"] == f"/runs/{old}/calibration"
    form = next(
        f
        for f in case.select("#labels form")
        if f.select_one("[name=metric]")["value"] == "ROUGE-L"
    )
    assert form.select_one("input[name=note]")["value"] == "judge too strict <b>"
    assert form.select_one("input[value=fail]").has_attr("checked")


def test_compare_puts_regressions_first_with_intervals(client: TestClient, folder: Path) -> None:
    old, new = demo_ids(folder)
    page = soup(client.get("/compare", params=[("run", new), ("run", old)]).text)
    assert page.select_one("#compare-verdict").get_text() == "regression"
    order = [s["id"] for s in page.select("main section[id]")]
    assert order[0] == "regressions"
    first = page.select("table.deltas tbody tr")[0]
    assert "worse" in first.get_text() and "[" in first.get_text()
    changes = page.select("#answers article.change")
    assert changes and "regressed" in changes[0]["class"]
    assert changes[0].select("del") or changes[0].select("ins")


def test_leaderboard_of_two_targets(client: TestClient, folder: Path) -> None:
    old, _ = demo_ids(folder)
    page = client.get("/leaderboard", params=[("run", old), ("run", "hostile-run")])
    assert page.status_code == 200
    assert "evalrunner-demo-hr" in page.text and "<script>alert" not in page.text
    one = client.get("/leaderboard", params=[("run", old)])
    assert one.status_code == 400


def test_export_is_a_self_contained_archive(client: TestClient, folder: Path) -> None:
    old, _ = demo_ids(folder)
    answer = client.get(f"/runs/{old}/export.zip")
    assert answer.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    assert {"index.html", "report.json", "summary.json", "README.txt"} <= set(archive.namelist())
    html = archive.read("index.html").decode("utf-8")
    # opens with no server: nothing is loaded from anywhere
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert not re.search(r"""<(script|link)[^>]+(src|href)=""", html)
    assert ReportData.model_validate_json(archive.read("report.json")).run_id == old
    hostile = client.get("/runs/hostile-run/export.zip")  # quotes and markup in the target
    assert hostile.status_code == 200
    assert re.fullmatch(
        r'attachment; filename="[A-Za-z0-9._-]+\.zip"', hostile.headers["content-disposition"]
    )


def test_leaderboard_draws_a_radar_and_bars_per_target(client: TestClient, folder: Path) -> None:
    old, _ = demo_ids(folder)
    page = soup(client.get("/leaderboard", params=[("run", old), ("run", "hostile-run")]).text)
    assert [tr.select("td")[1].get_text() for tr in page.select("#board tbody tr")] == [
        old,
        "hostile-run",
    ]
    polygons = page.select("#radar polygon.series")
    assert len(polygons) == 2 and all(p.select_one("title") for p in polygons)
    primary = len(page.select("#radar text.axis"))
    assert primary >= 3
    assert len(page.select("#bars svg")) == primary
    assert all(len(svg.select("rect")) == 2 for svg in page.select("#bars svg"))
    report = page.select_one("#board-report")["href"]
    assert client.get(report).status_code == 200


def test_a_comparison_exports_as_a_self_contained_archive(client: TestClient, folder: Path) -> None:
    old, new = demo_ids(folder)
    page = soup(client.get("/compare", params={"a": old, "b": new}).text)
    answer = client.get(page.select_one("#compare-export")["href"])
    archive = zipfile.ZipFile(io.BytesIO(answer.content))
    assert set(archive.namelist()) == {
        "index.html",
        "baseline.json",
        "current.json",
        "regression.json",
        "README.txt",
    }
    html = archive.read("index.html").decode("utf-8")
    assert not re.search(r"<script|<link[^>]+stylesheet|(src|href)=[\"']?(https?:)?//", html)
    standalone = soup(html)
    assert standalone.select_one("style") and "regression" in standalone.get_text()
    assert ReportData.model_validate_json(archive.read("baseline.json")).run_id == old
    assert ReportData.model_validate_json(archive.read("current.json")).run_id == new
    assert b'"verdict": "regression"' in archive.read("regression.json")


def test_case_page_shows_steps_iterations_variants_and_turns(client: TestClient) -> None:
    page = soup(client.get("/runs/rich-run/cases/0").text)
    steps = page.select("#steps li")
    assert "lookup_policy" in steps[0].get_text() and "throttled" in steps[1].get_text()
    iterations = page.select("#iterations tbody tr")
    assert [tr.select("td")[0].get_text() for tr in iterations] == ["1", "2"]
    variants = page.select("#variants tbody tr")
    assert "typos" in variants[0].get_text()
    variant = variants[0].select_one("a")["href"]
    beside = soup(client.get(variant).text)
    assert "original" in beside.select_one("#variants tbody tr").get_text()
    chat = soup(client.get("/runs/rich-run/cases/3").text)
    turns = chat.select("#turns li")
    assert len(turns) == 3 and "this row" in turns[1].get_text()
    perturbed = soup(client.get("/runs/rich-run/cases", params={"perturbation": "typos"}).text)
    assert [a.get_text() for a in perturbed.select("a.case-link")] == [f"{_first_id(client)}~typos"]


def _first_id(client: TestClient) -> str:
    return client.app.state.viewer.store.report("rich-run").row(0).case_id
