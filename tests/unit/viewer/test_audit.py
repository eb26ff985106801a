"""Hostile input the viewer's author did not try (audit of issue 33): a query string the
runs page cannot read, an odd object in a bucket, run ids that are not URL-safe."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalrunner.viewer.app import create_app
from evalrunner.viewer.source import LocalSource

TOKEN = "audit-token-0123456789"


@pytest.fixture
def folder(runs_folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(runs_folder, copy)
    return copy


@pytest.fixture
def client(folder: Path) -> TestClient:
    return TestClient(create_app(LocalSource(folder), token=TOKEN), base_url="http://127.0.0.1")


@pytest.mark.parametrize(
    ("query", "named"),
    [("page=-1", "page"), ("page=abc", "page"), ("size=0", "size"), ("since=" + "9" * 40, "since")],
)
def test_a_runs_query_it_cannot_read_is_a_clear_400(
    client: TestClient, query: str, named: str
) -> None:
    answer = client.get(f"/?{query}")
    assert answer.status_code == 400
    assert named in answer.text
    assert "content-security-policy" in answer.headers
