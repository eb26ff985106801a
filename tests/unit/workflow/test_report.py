"""The workflow report and the manifest's rules: the verdict over the steps that ran, text
from a step escaped, links relative to the folder, and when a step counts as finished."""

from __future__ import annotations

import json
from pathlib import Path

from evalrunner.workflow.config import Step
from evalrunner.workflow.manifest import Manifest, StepRecord, finished, load, save, verdict
from evalrunner.workflow.report import write_report


def test_the_verdict_counts_the_steps_that_ran() -> None:
    m = Manifest()
    assert verdict(m) == "passed"  # nothing ran, nothing failed
    m.replace(StepRecord(step=Step.EVALUATE, status="done", verdict="passed"))
    m.replace(StepRecord(step=Step.CALIBRATE, status="skipped"))
    assert verdict(m) == "passed"
    m.replace(StepRecord(step=Step.REDTEAM, status="done", verdict="failed"))
    assert verdict(m) == "failed"
    m.replace(StepRecord(step=Step.ARTIFACTS, status="failed", error="judge down"))
    assert verdict(m) == "incomplete"


def test_a_step_is_finished_only_with_the_same_inputs_and_its_outputs(tmp_path: Path) -> None:
    (tmp_path / "out.json").write_text("{}")
    done = StepRecord(
        step=Step.WEAK_SPOTS, status="done", inputs_digest="d1", outputs={"x": "out.json"}
    )
    assert finished(done, "d1", tmp_path)
    assert not finished(done, "d2", tmp_path)  # a setting changed
    (tmp_path / "out.json").unlink()
    assert not finished(done, "d1", tmp_path)  # its output is gone
    assert not finished(done.model_copy(update={"status": "failed"}), "d1", tmp_path)


def test_the_report_escapes_step_text_and_links_relative_paths(tmp_path: Path) -> None:
    m = Manifest()
    m.replace(
        StepRecord(
            step=Step.EVALUATE,
            status="done",
            verdict="failed",
            headline="FAILED: <script>alert(1)</script>",
            outputs={"report": "evaluate/r.html", "details": "evaluate/d.csv"},
        )
    )
    m.replace(StepRecord(step=Step.REDTEAM, status="failed", error="judge: <b>down</b>"))
    save(tmp_path, m)
    assert load(tmp_path) == m
    html_path, json_path = write_report(tmp_path, m, "docs/")
    html = html_path.read_text("utf-8")
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)" in html
    assert "judge: &lt;b&gt;down" in html
    assert 'href="evaluate/r.html"' in html and "d.csv" not in html  # pages, not every file
    report = json.loads(json_path.read_text("utf-8"))
    assert report["verdict"] == "incomplete"
    assert [s["status"] for s in report["steps"]][:4] == ["pending", "done", "pending", "failed"]
