"""How the HTML reports are built: templates and static files shipped as package data, one
palette, autoescaping, and template layout that never touches the run's text."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from importlib import resources
from pathlib import Path

from bs4 import BeautifulSoup

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.model import CaseRow, Leaderboard, MetricInfo, ReportData
from evalrunner.reports.views import palette
from evalrunner.reports.views.html import render_leaderboard, render_report

ROOT = Path(__file__).resolve().parents[3]
REPORTS = resources.files("evalrunner.reports")


def report(answer: str) -> ReportData:
    info = MetricInfo(metric="m", evaluator="e", primary=True, threshold=0.5, higher_is_better=True)
    failed = MetricResult(
        evaluator="e", metric="m", status="scored", score=0.1, success=False, threshold=0.5,
        reason="low",
    )  # fmt: skip
    row = CaseRow(
        case_id="c1", iteration=1, question="q?", answer=answer, status="ok", results=[failed]
    )
    return ReportData(
        run_id="r1", target="t", target_kind="lambdaArn", suite="s.csv",
        started_at="2024-01-01T00:00:00+00:00", finished_at="2024-01-01T00:01:00+00:00",
        iterations=1, config={}, metrics=[info], stats=[], rows=[row],
    )  # fmt: skip


def package_files(folder: str) -> list[str]:
    return sorted(
        f"reports/{folder}/{p.name}" for p in REPORTS.joinpath(folder).iterdir() if p.is_file()
    )


def test_templates_and_static_files_ship_as_package_data() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["evalrunner"]
    files = package_files("templates") + package_files("static")
    assert {"reports/static/report.css", "reports/static/report.js"} <= set(files)
    assert any(f.endswith(".html.j2") for f in files)
    missing = [f for f in files if not any(fnmatch.fnmatch(f, g) for g in globs)]
    assert not missing, f"not in [tool.setuptools.package-data]: {missing}"


def test_palette_is_defined_once() -> None:
    css = REPORTS.joinpath("static", "report.css").read_text("utf-8")
    named = {
        v.lower()
        for k, v in vars(palette).items()
        if k.isupper() and isinstance(v, str) and v.startswith("#")
    }
    repeated = sorted(c for c in named if c in css.lower())
    assert not repeated, f"palette colours written into report.css: {repeated}"
    # the page's custom properties are the palette's
    style = BeautifulSoup(render_report(report("a")), "html.parser").find("style").get_text()
    root = re.search(r":root\{([^}]*)\}", style)
    assert root is not None
    declared = dict(d.split(":", 1) for d in root.group(1).split(";"))
    assert declared == {f"--{k}": v.lower() for k, v in palette.CSS_VARIABLES.items()}
    # every var() the stylesheet uses is declared
    assert set(re.findall(r"var\((--[\w-]+)\)", css)) <= set(declared)


def test_templates_never_turn_autoescaping_off() -> None:
    for path in REPORTS.joinpath("templates").iterdir():
        text = path.read_text("utf-8")
        assert "|safe" not in text.replace(" ", ""), path.name
        assert "autoescape" not in text, path.name


def test_template_layout_leaves_run_text_alone() -> None:
    # line breaks and indentation next to markup in the *answer* are the target's, kept as is
    answer = "first line\n    <b>indented</b>\n\n{{ not a template }}\n  {% neither %}\n"
    page = render_report(report(answer))
    txt = BeautifulSoup(page, "html.parser").find("div", class_="answer").find(class_="txt")
    assert txt.get_text() == answer
    assert "<b>" not in page


def test_pages_are_compact() -> None:
    page = render_leaderboard(
        Leaderboard(suite="s", created_at="now", metrics=[], entries=[], best_per_metric={},
                    difficult_cases=[])
    )  # fmt: skip
    body = page.split("</style>", 1)[1].split("<script>", 1)[0]
    assert "\n" not in body  # the templates' layout does not reach the page
