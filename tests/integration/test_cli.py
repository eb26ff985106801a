"""The CLI as a user drives it: exit codes, messages, and nothing half-written on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.pipeline.context import Runtime
from evalrunner.suite import read_suite_file
from lambdas.local import local_pipeline

from .conftest import read_csv

runner = CliRunner()
DEMO = '{"lambdaArn": "evalrunner-demo-hr"}'


def invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def write(tmp_path: Path, name: str, content: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def good_event(tmp_path: Path, **extra) -> Path:
    ev = {
        "key": "test-suites/hr.xlsx",
        "iterations": 1,
        "target": {"agentId": "ABCDEFGHIJ", "agentAliasId": "TSTALIASID", "metric": "Rouge Metric"},
        **extra,
    }
    return write(tmp_path, "event.json", json.dumps(ev))


def test_validate_good_event(tmp_path):
    result = invoke("validate", str(good_event(tmp_path)))
    assert result.exit_code == 0 and "valid" in result.stdout


def test_validate_bad_event_exits_non_zero_with_each_problem(tmp_path):
    path = write(
        tmp_path,
        "bad.json",
        json.dumps(
            {
                "key": "test-suites/x.xlsx",
                "iterations": "2",
                "target": {"lambdaArn": "f", "url": "http://x"},
            }
        ),
    )
    result = invoke("validate", str(path))
    assert result.exit_code == 2
    assert "iterations" in result.stderr and "exactly one target kind" in result.stderr


def test_schema_event_is_valid_json_schema():
    import jsonschema

    result = invoke("schema", "event")
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert "iterations" in schema["required"]


def test_template_round_trip(tmp_path):
    path = tmp_path / "suite.xlsx"
    assert invoke("template", str(path)).exit_code == 0
    suite = read_suite_file(path)
    assert suite.cases and all(c.question for c in suite.cases)
    from openpyxl import load_workbook

    assert "Instructions" in load_workbook(path).sheetnames


def run_cli(tmp_path: Path, suite: Path, *extra: str):
    out = tmp_path / "out"
    result = invoke(
        "run", "--suite", str(suite), "--target", DEMO, "--out", str(out), "--quiet", *extra
    )
    return result, out


@pytest.mark.parametrize(
    "name,content,expected",
    [
        ("broken.xlsx", b"PK\x03\x04 not really a workbook", "not a readable xlsx"),
        ("noq.csv", "prompt_text,expected_answer\nhello,world\n", "question"),
        ("empty.csv", "question,expected_answer\n", "no test cases"),
        ("blank.csv", "question,expected_answer\n,something\n", "row 2"),
    ],
)
def test_bad_suites_exit_2_and_write_nothing(tmp_path, name, content, expected):
    result, out = run_cli(tmp_path, write(tmp_path, name, content))
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    "extra,expected",
    [
        (("--iterations", "0"), "iterations"),
        (("--metric", "Faithfulnes"), "unknown metric"),
        (("--fail-under", "ROUGE-L"), "METRIC=NUMBER"),
    ],
)
def test_bad_options_exit_2_and_write_nothing(tmp_path, extra, expected):
    suite = write(tmp_path, "ok.csv", "question,expected_answer\nHow many days of leave?,25 days\n")
    result, out = run_cli(tmp_path, suite, *extra)
    assert result.exit_code == 2 and expected in result.stderr
    assert not out.exists()


def test_two_target_kinds_exit_2(tmp_path):
    suite = write(tmp_path, "ok.csv", "question\nHi?\n")
    result = invoke(
        "run",
        "--suite",
        str(suite),
        "--target",
        '{"lambdaArn": "a", "url": "http://127.0.0.1:1"}',
        "--out",
        str(tmp_path / "o"),
    )
    assert result.exit_code == 2 and "exactly one target kind" in result.stderr


def test_gate_decides_exit_code(tmp_path):
    suite = write(
        tmp_path,
        "ok.csv",
        "question,expected_answer\n"
        "How many days of annual leave do full-time employees get per year?,"
        "Full-time employees receive 25 days of paid annual leave per calendar year.\n",
    )
    # --fail-on errors: only gates (and too many errors) fail the run, whatever its cases
    passing, out = run_cli(
        tmp_path, suite, "--fail-under", "ROUGE-L=0.1", "--iterations", "2", "--fail-on", "errors"
    )
    assert passing.exit_code == 0, passing.output
    details = next(out.rglob("*details.csv"))
    assert len(read_csv(details)) == 2
    failing, _ = run_cli(tmp_path, suite, "--fail-under", "Exact match=1", "--fail-on", "errors")
    assert failing.exit_code == 1
    assert "FAIL" in failing.stdout
    assert "verdict: FAILED" in failing.stdout and "gate Exact match" in failing.stdout


def test_start_runs_an_event_locally(tmp_path):
    suite = write(tmp_path, "hr.csv", "question,expected_answer\nHow many sick days?,10 days\n")
    ev = write(
        tmp_path,
        "ev.json",
        json.dumps({"key": "test-suites/hr.csv", "iterations": 1, "target": json.loads(DEMO)}),
    )
    result = invoke("start", "--event", str(ev), "--out", str(tmp_path / "out"), "--json")
    summary = json.loads(result.stdout)
    assert result.exit_code == summary["verdict"]["exit_code"], result.output
    assert summary["suite"] == "test-suites/hr.csv" and summary["items"] == 1
    assert (tmp_path / "out" / summary["reports"]["details"]).is_file()
    assert suite.is_file()


def test_start_aws_uploads_starts_follows_and_downloads(tmp_path, monkeypatch):
    """--aws against a deployed state machine (moto stands in for the account)."""
    import boto3

    from evalrunner.engine.dispatch import Dispatcher, dispatching
    from evalrunner.engine.embedded import BUCKET
    from evalrunner.engine.local import LocalEngine

    # The deployed functions' environment (the stack sets both; the engine sets neither).
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("EVALRUNNER_BUCKET", BUCKET)

    suite = write(tmp_path, "hr.csv", "question,expected_answer\nHow many sick days?,10 days\n")
    ev = write(
        tmp_path,
        "ev.json",
        json.dumps({"key": "test-suites/hr.csv", "iterations": 1, "target": json.loads(DEMO)}),
    )
    engine = LocalEngine(pipeline=local_pipeline)
    with engine.embedded_aws(), dispatching(Dispatcher(engine.functions_for(Runtime()))):
        engine.deploy(b"placeholder", "test-suites/other.csv")
        arn = boto3.client("stepfunctions").list_state_machines()["stateMachines"][0][
            "stateMachineArn"
        ]
        result = invoke(
            "start",
            "--event",
            str(ev),
            "--aws",
            "--bucket",
            BUCKET,
            "--state-machine-arn",
            arn,
            "--suite",
            str(suite),
            "--out",
            str(tmp_path / "out"),
            "--fail-on",
            "errors",  # carried in the event to the deployed run's verdict
        )
        uploaded = boto3.client("s3").get_object(Bucket=BUCKET, Key="test-suites/hr.csv")
        assert uploaded["Body"].read() == suite.read_bytes()
    assert result.exit_code == 0, result.output
    assert "verdict: PASSED (exit code 0, --fail-on errors)" in result.stdout
    assert list((tmp_path / "out").rglob("*-result.csv"))


def test_malformed_condition_exits_2_naming_row_and_position(tmp_path):
    suite = write(tmp_path, "c.csv", 'question,condition\nQ?,"""a"" AND (""b"""\n')
    result, out = run_cli(tmp_path, suite, "--metric", "Text matching")
    assert result.exit_code == 2
    assert "row 2" in result.stderr and "position" in result.stderr
    assert not out.exists()


def test_degraded_demo_is_a_regression_and_fails_with_the_flag(tmp_path):
    out = tmp_path / "out"
    # --fail-on errors: the demo's failing cases do not fail these runs; regressions decide
    first = invoke("demo", "--out", str(out), "--json", "--fail-on", "errors")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["regression"] is None  # nothing to compare with yet
    second = invoke(
        "demo", "--out", str(out), "--degraded", "--fail-on-regression", "--json",
        "--fail-on", "errors",
    )  # fmt: skip
    assert second.exit_code == 1, second.output
    summary = json.loads(second.stdout)
    assert summary["verdict"]["outcome"] == "regressed"
    regression = summary["regression"]
    assert regression["verdict"] == "regression"
    assert regression["baseline_run_id"] == json.loads(first.stdout)["run_id"]
    assert "ROUGE-L" in regression["worse_metrics"] and regression["new_failures"] > 0
    assert summary["problems"][0]["type"] == "regression"
    assert summary["problems"][0]["severity"] == "high"
    html = (out / summary["reports"]["html"]).read_text("utf-8")
    # the regression section comes before the rest of the report
    assert html.index("ROUGE-L fell by") < html.index("Pass rate")
    # without the flag the same regression is reported but does not fail the command
    third = invoke("demo", "--out", str(out), "--json", "--fail-on", "errors")
    assert third.exit_code == 0
    assert json.loads(third.stdout)["regression"]["verdict"] in ("improvement", "regression")
    # and by default the demo's failing cases fail it, as in DeepEval or promptfoo
    fourth = invoke("demo", "--out", str(out), "--json")
    assert fourth.exit_code == 1
    assert json.loads(fourth.stdout)["verdict"]["outcome"] == "failed"


def test_several_targets_make_a_leaderboard(tmp_path):
    suite = write(
        tmp_path,
        "hr.csv",
        "question,expected_answer\n"
        "How many days of annual leave do full-time employees get per year?,"
        "Full-time employees receive 25 days of paid annual leave per calendar year.\n"
        "What is the weather tomorrow?,I can only help with HR questions.\n",
    )
    out = tmp_path / "out"
    result = invoke(
        "run",
        "--suite",
        str(suite),
        "--target",
        DEMO,
        "--target",
        '{"lambdaArn": "evalrunner-demo-hr", "name": "demo-copy"}',
        "--out",
        str(out),
        "--quiet",
        "--metric",
        "Rouge Metric",
        "--fail-on",
        "errors",
    )
    assert result.exit_code == 0, result.output
    (board_json,) = (out / "test-reports" / "_leaderboard").glob("*-leaderboard.json")
    board = json.loads(board_json.read_text())
    assert [e["target"] for e in board["entries"]] == ["evalrunner-demo-hr", "demo-copy"]
    assert board["best_per_metric"]["ROUGE-L"] == "evalrunner-demo-hr"  # a tie goes to the first
    # each run's own verdict, on the page and in the terminal's table
    verdicts = [
        json.loads(p.read_text())["verdict"]["headline"]
        for p in sorted(out.rglob("*-summary.json"))
    ]
    assert sorted(e["verdict"] for e in board["entries"]) == sorted(verdicts)
    (verdict_row,) = [
        line for line in result.output.splitlines() if line.strip("│ ").startswith("verdict ")
    ]
    assert [cell.strip() for cell in verdict_row.strip("│").split("│")][1:] == [
        e["verdict"] for e in board["entries"]
    ]
    assert list((out / "test-reports" / "_leaderboard").glob("*-leaderboard.html"))
    # the same comparison from existing runs
    reports = sorted(str(p) for p in out.rglob("*-report.json"))
    again = invoke("leaderboard", *reports, "--out", str(tmp_path / "o2"), "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["suite"] == "test-suites/hr.csv"
    # ... and by run id
    run_ids = [json.loads(p.read_text())["run_id"] for p in sorted(out.rglob("*-summary.json"))]
    by_id = invoke("leaderboard", *run_ids, "--out", str(out), "--json")
    assert by_id.exit_code == 0, by_id.output
    assert {e["run_id"] for e in json.loads(by_id.stdout)["entries"]} == set(run_ids)
    missing = invoke("leaderboard", "no-such-run", run_ids[0], "--out", str(out))
    assert missing.exit_code == 2 and "neither a report.json file nor a run id" in missing.stderr
