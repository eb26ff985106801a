"""Compiled report templates are kept in Jinja's bytecode cache (issue 18: compiling them was
a fifth of a fresh process's Aggregate): a second process renders the same page without
compiling, an edit to how the module compiles misses the old entries, and a cache that is
off, cannot be made or cannot be written never costs the page."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jinja2 import Environment

from evalrunner.reports.views import html
from tests.unit.reports.test_report_html import make_report


@pytest.fixture(autouse=True)
def _fresh_environment() -> Iterator[None]:
    html._environment.cache_clear()  # each test builds the environment a new process would
    yield
    html._environment.cache_clear()


def _no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def compile(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a template was compiled")

    monkeypatch.setattr(Environment, "compile", compile)


def test_a_fresh_process_renders_from_the_cache_without_compiling(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(html.TEMPLATE_CACHE_ENV, str(tmp_path / "templates"))
    data = make_report()
    first = html.render_report(data)
    assert list((tmp_path / "templates").iterdir())  # the compiled templates were written
    html._environment.cache_clear()
    with monkeypatch.context() as patched:
        _no_compiling(patched)
        assert html.render_report(data) == first


def test_an_edit_to_the_compiling_module_misses_the_old_entries(tmp_path: Path) -> None:
    old = html._TemplateCache(str(tmp_path), "before")
    new = html._TemplateCache(str(tmp_path), "after")
    assert old.get_cache_key("report.html.j2") != new.get_cache_key("report.html.j2")


def test_turned_off_or_unmakeable_the_page_is_compiled_as_before(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(html.TEMPLATE_CACHE_ENV, "off")
    assert html._bytecode_cache() is None
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(html.TEMPLATE_CACHE_ENV, str(blocker / "templates"))
    assert html._bytecode_cache() is None
    assert "<!DOCTYPE html>" in html.render_report(make_report())


def test_a_cache_that_cannot_be_written_costs_a_compile_not_the_page(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "templates"
    monkeypatch.setenv(html.TEMPLATE_CACHE_ENV, str(folder))
    html._environment()  # the cache is set up on a folder that then goes away
    shutil.rmtree(folder)
    assert "<!DOCTYPE html>" in html.render_report(make_report())


def test_a_folder_others_can_write_to_is_not_used(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)  # compiled templates are code: never read from here
    monkeypatch.setenv(html.TEMPLATE_CACHE_ENV, str(shared))
    assert html._bytecode_cache() is None
    shared.chmod(0o700)
    assert html._bytecode_cache() is not None
