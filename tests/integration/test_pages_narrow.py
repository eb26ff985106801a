"""report.html, the history page and the leaderboard as a reader sees them, in headless
Chromium at a phone's width (390 px) and a desktop's (1280 px): the verdict, the pass rates
and the gates are drawn inside the window (not cut off, not in a part of a table one must
scroll sideways to), the page itself never scrolls sideways, and a history chart fills the
page's content width and names each run on its x axis. Positions, not pixels."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrunner.reports.verdict import HEADLINES
from tests.support.browser import Box, Browser
from tests.support.pages import history_page, leaderboard_page, report_page

WIDTHS = (390, 1280)
RUNS = 12


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Browser, Path]]:
    folder = tmp_path_factory.mktemp("pages")
    (folder / "report.html").write_text(report_page(), "utf-8")
    (folder / "history.html").write_text(history_page(RUNS), "utf-8")
    (folder / "leaderboard.html").write_text(leaderboard_page(), "utf-8")
    with Browser(folder) as chromium:
        yield chromium, folder


def show(browser: tuple[Browser, Path], page: str, width: int) -> Browser:
    chromium, folder = browser
    chromium.open(folder / page, width=width)
    # the page never scrolls sideways: only a wide chart or table scrolls, inside its box
    scroll, window = chromium.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= window, f"{page} at {width} px is {scroll} px wide"
    return chromium


def assert_in_view(boxes: dict[str, Box | None], *names: str) -> None:
    for name in names:
        box = boxes[name]
        assert box is not None, f"{name}: no such element"
        assert box.inside, f"{name} ({box.text!r}) is not in view: {box}"


@pytest.mark.parametrize("width", WIDTHS)
def test_report_verdict_pass_rates_and_gates_in_view(
    browser: tuple[Browser, Path], width: int
) -> None:
    chromium = show(browser, "report.html", width)
    boxes = chromium.boxes(
        {
            "verdict": "#verdict",
            "gate": "table.gates td.gate",
            "gate result": "table.gates td.result",
            "gate head": "table.gates th:nth-child(2)",
            "pass rate (narrow)": "table.rates td.pass-rate",
            "pass rate chart (wide)": "#metrics svg.bars",
        }
    )
    assert_in_view(boxes, "verdict", "gate", "gate result", "gate head")
    assert boxes["verdict"] is not None and boxes["verdict"].text == "REGRESSED"
    assert boxes["gate result"] is not None and boxes["gate result"].text == "FAILED"
    # a phone gets the pass rates as a narrow table, a desktop the chart that holds them
    if width < 600:
        assert_in_view(boxes, "pass rate (narrow)")
        assert boxes["pass rate (narrow)"] is not None
        assert boxes["pass rate (narrow)"].text.endswith("%")
    else:
        assert_in_view(boxes, "pass rate chart (wide)")


@pytest.mark.parametrize("width", WIDTHS)
def test_history_verdict_pass_rate_and_gates_in_view(
    browser: tuple[Browser, Path], width: int
) -> None:
    chromium = show(browser, "history.html", width)
    boxes = chromium.boxes(
        {
            "run": "table.history td.run",
            "verdict": "table.history td.verdict",
            "pass rate": "table.history td.pass-rate",
            "gates": "table.history td.gates",
            "verdict head": "table.history th:nth-child(2)",
            "pass rate head": "table.history th:nth-child(3)",
            "gates head": "table.history th:nth-child(4)",
        }
    )
    assert_in_view(boxes, "run", "verdict", "pass rate", "gates", "verdict head", "pass rate head")
    assert_in_view(boxes, "gates head")
    assert [boxes[n].text for n in ("verdict head", "pass rate head", "gates head")] == [  # type: ignore[union-attr]
        "Verdict",
        "Pass rate",
        "Gates",
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_history_charts_fill_the_content_and_name_each_run(
    browser: tuple[Browser, Path], width: int
) -> None:
    chromium = show(browser, "history.html", width)
    boxes = chromium.boxes(
        {"chart": "figure.trend svg", "figure": "figure.trend", "first run": "svg text.run"}
    )
    chart, figure = boxes["chart"], boxes["figure"]
    assert chart is not None and figure is not None
    assert chart.width >= figure.width - 1  # at least as wide as the page's content
    assert_in_view(boxes, "first run")  # the oldest run's label, under its dot
    labels = chromium.evaluate(
        "Array.from(document.querySelector('figure.trend svg')"
        ".querySelectorAll('text.run')).map(t => Array.from(t.childNodes)"
        ".filter(n => n.nodeType === Node.TEXT_NODE).map(n => n.textContent).join('').trim())"
    )
    # each run named on the x axis by the day and the time it started, oldest left
    assert labels[: 2 * RUNS : 2] == [f"11-{10 + i:02d}" for i in range(RUNS)]
    assert set(labels[1::2]) == {"09:00"}


@pytest.mark.parametrize("width", WIDTHS)
def test_leaderboard_verdict_pass_rate_and_gates_in_view(
    browser: tuple[Browser, Path], width: int
) -> None:
    chromium = show(browser, "leaderboard.html", width)
    boxes = chromium.boxes(
        {
            "target": "table.leaderboard td.target",
            "verdict": "table.leaderboard td.verdict",
            "pass rate": "table.leaderboard td.pass-rate",
            "gates": "table.leaderboard td.gates",
            "verdict head": "table.leaderboard th:nth-child(2)",
            "pass rate head": "table.leaderboard th:nth-child(3)",
            "gates head": "table.leaderboard th:nth-child(4)",
        }
    )
    assert_in_view(
        boxes,
        "target",
        "verdict",
        "pass rate",
        "gates",
        "verdict head",
        "pass rate head",
        "gates head",
    )
    assert boxes["verdict"] is not None and boxes["verdict"].text in HEADLINES.values()
    assert boxes["verdict head"] is not None and boxes["verdict head"].text == "Verdict"
    assert boxes["pass rate"] is not None and boxes["pass rate"].text.endswith("%")
    assert boxes["gates"] is not None and boxes["gates"].text == "FAIL"
