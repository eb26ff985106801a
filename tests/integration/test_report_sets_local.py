"""Report sets in the local --out folder: the prefix is claimed there too (exclusive
create), and a set without its manifest is never a baseline nor found by run id."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.pipeline import prepare
from lambdas.local import local_pipeline

runner = CliRunner()
FROZEN = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)
STAMP = "261122-093005"


def test_local_runs_in_one_second_claim_apart_and_skip_an_incomplete_set(tmp_path, monkeypatch):
    monkeypatch.setattr(prepare, "utcnow", lambda: FROZEN)
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nHow many sick days?,10 days\n", "utf-8")
    out = tmp_path / "out"
    folder = out / "test-reports" / "evalrunner-demo-hr"
    folder.mkdir(parents=True)
    # a run in another process claimed this second's prefix and is still writing
    (folder / f"{STAMP}-claim.json").write_text('{"run_id": "elsewhere"}', "utf-8")

    def run() -> dict:
        result = runner.invoke(
            app,
            [
                "run",
                "--suite",
                str(suite),
                "--target",
                '{"lambdaArn": "evalrunner-demo-hr"}',
                "--metric",
                "Token F1",
                "--out",
                str(out),
                "--json",
                "--fail-on",
                "errors",
            ],
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    first = run()
    assert first["reports"]["summary"].startswith(f"test-reports/evalrunner-demo-hr/{STAMP}-2-")
    assert first["regression"] is None
    assert (folder / f"{STAMP}-claim.json").read_text("utf-8") == '{"run_id": "elsewhere"}'
    second = run()
    assert second["reports"]["summary"].startswith(f"test-reports/evalrunner-demo-hr/{STAMP}-3-")
    assert second["regression"]["baseline_run_id"] == first["run_id"]
    for key in second["reports"].values():  # every file of both sets is there, distinct
        assert (out / key).is_file()
    assert len(set(first["reports"].values()) | set(second["reports"].values())) == 18

    # the second set loses its manifest (a copy cut short): it is no longer a set
    (out / second["reports"]["manifest"]).unlink()
    third = run()
    assert third["regression"]["baseline_run_id"] == first["run_id"]
    listed = runner.invoke(
        app, ["leaderboard", second["run_id"], third["run_id"], "--out", str(out)]
    )
    assert listed.exit_code == 2
    assert f"{second['run_id']!r} is neither a report.json file nor a run id" in listed.stderr


def test_the_engine_itself_claims_in_its_out_dir(tmp_path, monkeypatch):
    """A program that drives LocalEngine directly (no CLI) gets the same --out claim: a
    foreign claim for this second's prefix in out_dir moves the run to the next suffix."""
    from evalrunner.engine import LocalEngine

    monkeypatch.setattr(prepare, "utcnow", lambda: FROZEN)
    out = tmp_path / "out"
    folder = out / "test-reports" / "evalrunner-demo-hr"
    folder.mkdir(parents=True)
    (folder / f"{STAMP}-claim.json").write_text('{"run_id": "elsewhere"}', "utf-8")
    event = {
        "key": "test-suites/s.csv",
        "iterations": 1,
        "target": {"lambdaArn": "evalrunner-demo-hr"},
        "metrics": ["Token F1"],
    }
    suite = b"question,expected_answer\nHow many sick days?,10 days\n"
    result = LocalEngine(pipeline=local_pipeline).run(event, suite=suite, out_dir=out)
    assert result.summary.reports.summary.startswith(f"test-reports/evalrunner-demo-hr/{STAMP}-2-")
    assert (folder / f"{STAMP}-claim.json").read_text("utf-8") == '{"run_id": "elsewhere"}'
