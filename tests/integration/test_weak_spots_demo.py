"""Acceptance of the weak spots: the demo's failures, through the embedded engine, grouped on
the packaged MiniLM into named groups, the same every time."""

from __future__ import annotations

import json
from pathlib import Path

from bs4 import BeautifulSoup

from evalrunner.engine.local import LocalEngine
from evalrunner.reports.analysis.weakness import MODE_ENV, find_weak_spots, question_embedder
from evalrunner.reports.model import ReportData
from lambdas.local import local_pipeline


def test_demo_failures_group_on_minilm_deterministically(tmp_path, monkeypatch):
    from evalrunner.demo.suite import demo_suite_path

    monkeypatch.setenv(MODE_ENV, "embeddings")  # the demo's lexical metrics load no model
    result = LocalEngine(pipeline=local_pipeline).run(
        {
            "key": "test-suites/demo-hr.xlsx",
            "iterations": 1,
            "target": {"lambdaArn": "evalrunner-demo-hr"},
        },
        suite=demo_suite_path(),
        out_dir=tmp_path,
    )
    report = next(f for f in map(Path, result.files) if f.name.endswith("report.json"))
    data = ReportData.model_validate(json.loads(report.read_text("utf-8")))
    assert data.weak_spots_method == "question embeddings of sentence-transformers/all-MiniLM-L6-v2"
    groups = [s for s in data.weak_spots if s.kind == "questions"]
    assert len(groups) >= 2
    assert len({g.name for g in groups}) == len(groups) and all(g.name for g in groups)
    assert all(g.failing and g.example_case in g.cases for g in groups)
    # alike questions land together: the annual-leave questions share a group
    leave = next(g for g in groups if "leave-01" in g.cases)
    assert {"leave-02", "leave-03"} <= set(leave.cases)
    # the same report data, grouped again, gives the same groups
    again, method = find_weak_spots(data, *question_embedder([], "embeddings"))
    assert method == data.weak_spots_method and again == data.weak_spots
    # report.html shows them; problems.json has a weakness for each weak group
    html = next(f for f in map(Path, result.files) if f.name.endswith("report.html")).read_text(
        "utf-8"
    )
    section = BeautifulSoup(html, "html.parser").find("section", id="weak-spots")
    assert section is not None and len(section.select("tbody tr")) == len(data.weak_spots)
    problems = json.loads(
        next(f for f in map(Path, result.files) if f.name.endswith("problems.json")).read_text(
            "utf-8"
        )
    )
    weak = [s for s in data.weak_spots if s.weak]
    assert len([p for p in problems if p["type"] == "weakness"]) == len(weak)
