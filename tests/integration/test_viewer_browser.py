"""The viewer clicked through in a real browser (the system Chromium, driven by Playwright),
at a desktop's width (1280 px) and a phone's (390 px), on two demo runs and a generated
10,000-case run: runs → run → filter the cases (htmx, under the viewer's CSP) → a case →
label it → calibrate → compare two runs → page through the large run's table. Each step
asserts what the reader sees; the page never scrolls sideways, and the browser reports no
blocked resource or script error."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from playwright.sync_api import Browser, Page, expect, sync_playwright

from evalrunner.viewer.app import create_app
from evalrunner.viewer.server import bind
from evalrunner.viewer.source import LocalSource
from tests.support.browser import CHROMIUM
from tests.support.viewer_runs import big_run, demo_runs, load

WIDTHS = (1280, 390)
BIG = 10_000


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, list[str]]]:
    folder = tmp_path_factory.mktemp("viewer-browser")
    good, degraded = demo_runs(folder)
    big_run(folder, good, BIG)
    ids = [load(good)[0].run_id, load(degraded)[0].run_id]
    sock = bind(0)
    server = uvicorn.Server(
        uvicorn.Config(create_app(LocalSource(folder)), log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}", folder, ids
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    width = request.param
    context = browser.new_context(viewport={"width": width, "height": 900})
    tab = context.new_page()
    problems: list[str] = []
    tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: problems.append(str(e)))
    yield tab
    context.close()
    assert not problems, f"the browser reported: {problems}"


def no_sideways_scroll(page: Page) -> None:
    scroll, window = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= window, f"{page.url} is {scroll} px wide in a {window} px window"


def in_view(page: Page, selector: str) -> None:
    box = page.locator(selector).first.bounding_box()
    width = page.viewport_size["width"] if page.viewport_size else 0
    assert box is not None, f"{selector} is not drawn"
    assert box["x"] >= 0 and box["x"] + box["width"] <= width + 1, f"{selector}: {box}"


@pytest.mark.parametrize("page", WIDTHS, indirect=True)
def test_runs_run_case_label_compare(page: Page, served: tuple[str, Path, list[str]]) -> None:
    base, folder, (old, new) = served
    page.goto(base + "/")
    assert page.locator("table#runs tbody tr").count() == 3
    no_sideways_scroll(page)

    # runs → run: the verdict first, in view
    page.click(f"a.run-link:text-is('{old}')")
    page.wait_for_url(f"**/runs/{old}")
    in_view(page, "#verdict .verdict")
    no_sideways_scroll(page)
    total = page.locator("#case-count").inner_text()
    assert total.startswith("27 of 27")

    # filter by a failing metric: htmx swaps the table in place (no page load)
    page.select_option("#cases select[name=metric]", "ROUGE-L")
    expect(page.locator("#case-count")).not_to_have_text(re.compile(r"^27 of"))
    assert "metric=ROUGE-L" in page.url  # the address keeps the filter
    failing = int(page.locator("#case-count").inner_text().split()[0])
    page.reload()  # … and opens the whole run page with it
    assert page.locator("#case-count").inner_text().startswith(f"{failing} of 27")
    in_view(page, "#verdict .verdict")
    assert 0 < failing < 27
    cells = page.locator("table.cases tbody tr td.fail")
    assert cells.count() >= failing  # every row shown fails ROUGE-L at least

    # run → case: the answer coloured by support, the metrics with their reasons
    page.locator("a.case-link").first.click()
    page.wait_for_url("**/cases/*")
    assert page.locator("#answer .sent").count() >= 1
    assert page.locator("#scores tbody tr").count() > 10
    no_sideways_scroll(page)

    # label ROUGE-L's verdict, with a note: stored for calibrate, shown back
    form = page.locator("form.label-form", has=page.locator("input[value='ROUGE-L']"))
    form.locator("input[value=pass]").check()
    form.locator("input[name=note]").fill(f"fine at {page.viewport_size}")
    form.locator("button").click()
    page.wait_for_load_state()
    form = page.locator("form.label-form", has=page.locator("input[value='ROUGE-L']"))
    assert "saved" in form.inner_text()
    (labels,) = folder.glob(f"test-reports/*/{old[:14]}labels.csv")
    assert "pass" in labels.read_text("utf-8")

    # → calibrate: calibrate's agreement page for the labels so far
    page.click("#calibrate")
    page.wait_for_url("**/calibration")
    assert "ROUGE-L" in page.locator("body").inner_text()
    page.go_back()

    # runs → tick the two demo runs → compare: the regression first
    page.goto(base + "/")
    page.check(f"input[name=run][value='{old}']")
    page.check(f"input[name=run][value='{new}']")
    page.click("#compare-picked")
    page.wait_for_url("**/compare?*")
    assert page.locator("#compare-verdict").inner_text() == "regression"
    in_view(page, "#compare-verdict")
    no_sideways_scroll(page)


@pytest.mark.parametrize("page", WIDTHS, indirect=True)
def test_large_run_pages_through_its_cases(page: Page, served: tuple[str, Path, list[str]]) -> None:
    base, _, _ = served
    page.goto(base + "/")
    page.click("a.run-link:text-matches('^big-')")
    page.wait_for_url("**/runs/big-*")
    assert page.locator("#case-count").inner_text().startswith(f"{BIG} of {BIG}")
    assert page.locator("table.cases tbody tr").count() == 50
    page.click("#case-pager a.next")
    expect(page.locator("#case-count")).to_contain_text("page 2 of")
    assert page.locator("a.case-link").first.inner_text() == "case-00050"
    page.fill("#cases input[name=q]", "case-09999")
    expect(page.locator("#case-count")).to_have_text(re.compile(r"^1 of"))
    assert page.locator("a.case-link").all_inner_texts() == ["case-09999"]
    no_sideways_scroll(page)
