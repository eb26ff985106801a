"""The workflow report and the manifest's rules: the verdict over the steps that ran, text
from a step escaped, links relative to the folder, and when a step counts as finished."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_a_step_whose_output_was_edited_by_hand_is_not_finished(tmp_path: Path) -> None:
    """The recorded digest of each output is checked, not only that the file is there: an
    output edited (or truncated) by hand runs its step again instead of being reused, and
    its readers with it (their inputs digest holds the recorded output digests)."""
    out = tmp_path / "out.json"
    out.write_text('{"weak_spots": []}')
    from evalrunner.workflow.manifest import digest_tree

    done = StepRecord(
        step=Step.WEAK_SPOTS,
        status="done",
        inputs_digest="d1",
        outputs={"x": "out.json"},
        output_digests={"x": digest_tree(out)},
    )
    assert finished(done, "d1", tmp_path)
    out.write_text('{"weak_spots": [], "edited": true}')
    assert not finished(done, "d1", tmp_path)


def test_a_hand_edited_manifest_missing_a_step_is_refused_by_name(tmp_path: Path) -> None:
    import pytest

    from evalrunner.errors import ConfigError

    m = Manifest()
    data = json.loads(m.model_dump_json())
    data["steps"] = [s for s in data["steps"] if s["step"] != "evaluate"]
    (tmp_path / "workflow.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="evaluate"):
        load(tmp_path)
    (tmp_path / "workflow.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not a workflow manifest"):
        load(tmp_path)


@pytest.mark.parametrize(
    "rel",
    [
        "/proc/self/environ",
        "../other-workflow/generate/suite.xlsx",
        "generate/../../x.csv",
        "javascript:alert(1)",
        "generate\\..\\..\\x.csv",
        "./generate/suite.xlsx",
        "",
    ],
)
def test_a_manifest_whose_output_points_outside_the_folder_is_refused(
    tmp_path: Path, rel: str
) -> None:
    """A tampered workflow.json (a step done, its output elsewhere) is refused by name: the
    next step would read that file as its suite (and the deployed one upload it), and the
    report would link it."""
    from evalrunner.errors import ConfigError

    data = json.loads(Manifest().model_dump_json())
    data["steps"][0].update(status="done", outputs={"suite": rel})
    (tmp_path / "workflow.json").write_text(json.dumps(data))
    with pytest.raises(
        ConfigError, match=r"steps\.0\.outputs: .*output 'suite'.*not a path inside"
    ):
        load(tmp_path)


def test_a_manifest_with_outputs_inside_the_folder_loads(tmp_path: Path) -> None:
    data = json.loads(Manifest().model_dump_json())
    data["steps"][0].update(
        status="done", outputs={"suite": "generate/suite.xlsx", "generation": "generate/g.json"}
    )
    (tmp_path / "workflow.json").write_text(json.dumps(data))
    assert load(tmp_path).steps[0].outputs["suite"] == "generate/suite.xlsx"
