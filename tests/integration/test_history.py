"""History over runs: three demo runs, the middle one degraded; the trend page Aggregate keeps
up to date shows the drop and marks the regression, and `evalrunner history` rebuilds it."""

from __future__ import annotations

import json

import pytest
from bs4 import BeautifulSoup
from typer.testing import CliRunner

from evalrunner.cli import app

runner = CliRunner()
pytestmark = pytest.mark.slow


def demo(out, *extra):
    result = runner.invoke(
        app, ["demo", "--out", str(out), "--metric", "Rouge Metric", "--json", *extra]
    )
    summary = json.loads(result.output)
    assert result.exit_code == summary["verdict"]["exit_code"], result.output
    return summary


def test_three_runs_one_degraded_show_the_drop_and_the_regression(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALRUNNER_DEMO_DEGRADED", raising=False)
    out = tmp_path / "out"
    first = demo(out)
    folder = out / "test-reports" / "evalrunner-demo-hr"
    after_one = json.loads((folder / "history.json").read_text("utf-8"))
    assert [r["run_id"] for r in after_one["runs"]] == [first["run_id"]]  # refreshed by the run
    second = demo(out, "--degraded")
    third = demo(out)

    history = json.loads((folder / "history.json").read_text("utf-8"))
    runs = history["runs"]
    assert [r["run_id"] for r in runs] == [first["run_id"], second["run_id"], third["run_id"]]
    assert [m["metric"] for m in history["metrics"]] == ["ROUGE-L"]
    assert history["metrics"][0]["threshold"] == 0.75
    rouge = [r["averages"]["ROUGE-L"] for r in runs]
    assert rouge[1] < rouge[0] - 0.05 and rouge[2] > rouge[1]  # the drop, and the recovery
    assert [r["verdict"] for r in runs] == [None, "regression", "improvement"]
    # each run's own verdict, as its summary has it (the demo fails some cases: failed)
    assert [r["outcome"] for r in runs] == [s["verdict"]["outcome"] for s in (first, second, third)]
    assert [r["headline"] for r in runs] == ["FAILED"] * 3
    assert "ROUGE-L" in runs[1]["worse_metrics"] and not runs[2]["worse_metrics"]
    assert runs[1]["pass_rate"] < runs[0]["pass_rate"]
    for run, summary in zip(runs, (first, second, third), strict=True):
        assert run["report"] == summary["reports"]["html"].rsplit("/", 1)[-1]
        assert (folder / run["report"]).is_file()

    page = BeautifulSoup((folder / "history.html").read_text("utf-8"), "html.parser")
    rows = page.select("table.history tbody tr")
    assert [r.find("a").text for r in rows] == [third["run_id"], second["run_id"], first["run_id"]]
    assert [r.get("class") for r in rows] == [None, ["regression"], None]
    assert "▼ regression" in rows[1].select_one("td.verdict").text
    # the run's own verdict heads the cell, as its report's banner and exit code say it
    assert [r.select_one("td.verdict strong").text for r in rows] == ["FAILED"] * 3
    assert rows[1].select_one("td.worse").text.endswith("▼")
    chart = page.select_one("svg.trend")
    dots = chart.select("a")
    assert [a["href"] for a in dots] == [r["report"] for r in runs]
    marks = [a for a in dots if a.select_one("text.regression")]
    assert [a["href"] for a in marks] == [runs[1]["report"]]
    assert chart.select_one("line.threshold") is not None

    # the command rebuilds the same history from the folder
    (folder / "history.json").unlink()
    result = runner.invoke(
        app, ["history", "--target", "evalrunner-demo-hr", "--out", str(out), "--json"]
    )
    assert result.exit_code == 0, result.output
    rebuilt = json.loads(result.output)
    assert [r["averages"] for r in rebuilt["runs"]] == [r["averages"] for r in runs]
    assert (folder / "history.html").is_file() and (folder / "history.json").is_file()


def test_history_of_an_unknown_target_names_the_known_ones(tmp_path):
    (tmp_path / "test-reports" / "prod-rag").mkdir(parents=True)
    result = runner.invoke(app, ["history", "--target", "prod", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "no runs in" in result.output and "prod-rag" in result.output
