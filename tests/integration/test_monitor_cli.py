"""Issue 34 items 1–2, locally: ``evalrunner monitor`` over each shipped sample scores its
interactions through the embedded pipeline and moves the watermark; a second run over the same
logs scores nothing new and says so (exit 0); a late record inside the allowed lateness is
scored once and a re-delivered one not at all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.monitor.watermark import LocalWatermarks

runner = CliRunner()
SAMPLES = Path(__file__).parents[2] / "test_suites" / "monitor"
CSV_MAP = ["--map", "question=user_message", "--map", "answer=bot_reply"]
CSV_MAP += ["--map", "timestamp=logged_at"]


def monitor(source: Path, out: Path, *extra: str) -> tuple[int, str]:
    args = ["monitor", str(source), "--out", str(out), "--quiet", "--fail-on", "errors", *extra]
    result = runner.invoke(app, args, catch_exceptions=False)
    return result.exit_code, result.output


def summary(out: Path, name: str) -> dict:
    """The summary of the monitor's latest run (the watermark names it)."""
    mark = LocalWatermarks(out).load(name)
    assert mark is not None
    for path in (out / "test-reports" / name).glob("*-summary.json"):
        found = json.loads(path.read_text("utf-8"))
        if found["run_id"] == mark.runs[-1]:
            return found
    raise AssertionError(f"no summary of run {mark.runs[-1]}")


@pytest.mark.parametrize(
    ("file", "extra"),
    [
        ("interactions.jsonl", []),
        ("interactions.csv", CSV_MAP),
        ("otel-genai-traces.json", []),
        ("bedrock-invocations.json.gz", []),
        ("bedrock-agent-traces.jsonl", []),
    ],
)
def test_each_sample_is_scored_once(tmp_path: Path, file: str, extra: list[str]) -> None:
    out = tmp_path / "out"
    code, output = monitor(SAMPLES / file, out, *extra)
    assert code == 0, output
    name = f"monitor-{file}"
    assert summary(out, name)["items"] == 4
    mark = LocalWatermarks(out).load(name)
    assert mark is not None and len(mark.decided) == 4 and len(mark.runs) == 1
    code, output = monitor(SAMPLES / file, out, *extra)
    assert code == 0, output
    assert f"nothing new to score for {name} since its watermark" in output
    assert len(list((out / "test-reports" / name).glob("*-summary.json"))) == 1


def test_late_and_duplicate_records(tmp_path: Path) -> None:
    logs, out = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    (logs / "a.jsonl").write_text((SAMPLES / "interactions.jsonl").read_text("utf-8"), "utf-8")
    assert monitor(logs, out)[0] == 0  # the watermark is now 09:31
    first = json.loads((SAMPLES / "interactions.jsonl").read_text("utf-8").splitlines()[0])
    late = {**first, "id": "chat-late", "timestamp": "2026-01-31T09:00:00Z"}  # 31 min late
    too_late = {**first, "id": "chat-old", "timestamp": "2026-01-31T08:00:00Z"}  # 91 min
    lines = [json.dumps(x) for x in (first, late, late, too_late)]  # first: delivered again
    (logs / "b.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    code, output = monitor(logs, out)
    assert code == 0, output
    assert "1 new, 1 to score, 6 already taken or duplicated, 1 too late" in output
    assert summary(out, "monitor-logs")["items"] == 1
    code, output = monitor(logs, out)
    assert code == 0 and "nothing new to score" in output


def test_a_sample_and_json_output(tmp_path: Path) -> None:
    out = tmp_path / "out"
    source = SAMPLES / "interactions.jsonl"
    code, output = monitor(source, out, "--sample", "2", "--seed", "5", "--json")
    assert code == 0, output
    assert json.loads(output)["items"] == 2
    code, output = monitor(source, out, "--json")
    assert code == 0
    # the two left out by the sample were decided too: nothing is new
    assert json.loads(output) == {
        "monitor": "monitor-interactions.jsonl",
        "message": "nothing new to score for monitor-interactions.jsonl since its watermark",
        "found": 4,
        "new": 0,
        "scored": 0,
        "duplicates": 4,
        "too_late": 0,
        "before_since": 0,
        "pending": 0,
        "problems": [],
    }


def test_bad_records_are_named_and_the_good_ones_scored(tmp_path: Path) -> None:
    log = tmp_path / "app.jsonl"
    good = {"question": "Q?", "answer": "A.", "timestamp": "2026-01-31T10:00:00Z"}
    log.write_text(json.dumps(good) + '\n{"question": "Q?"}\n', "utf-8")
    code, output = monitor(log, tmp_path / "out")
    assert code == 0, output
    assert f"{log} line 2, field 'answer': missing or empty" in output.replace("\n", " ")
    only_bad = tmp_path / "bad.jsonl"
    only_bad.write_text('{"question": "Q?"}\n', "utf-8")
    code, output = monitor(only_bad, tmp_path / "out")
    assert code == 2 and "no record of" in output


def test_a_metric_that_needs_a_reference_is_refused(tmp_path: Path) -> None:
    code, output = monitor(SAMPLES / "interactions.jsonl", tmp_path, "--metric", "BLEU")
    assert code == 2 and "'BLEU' needs expected_answer" in output


def test_pii_is_masked_before_scoring_unless_turned_off(tmp_path: Path) -> None:
    log = tmp_path / "pii.jsonl"
    record = {
        "id": "p1",
        "question": "Mail my payslip to jo.smith@example.com please",
        "answer": "Sent to jo.smith@example.com; call +44 20 7946 0958 if it is missing.",
        "contexts": ["Payslips go to the address on file."],
        "timestamp": "2026-01-31T10:00:00Z",
    }
    log.write_text(json.dumps(record) + "\n", "utf-8")
    masked_out, plain_out = tmp_path / "masked", tmp_path / "plain"
    assert monitor(log, masked_out)[0] == 0
    written = "".join(
        p.read_text("utf-8", errors="replace") for p in masked_out.rglob("*") if p.is_file()
    )
    assert "jo.smith@example.com" not in written and "7946" not in written
    (report,) = (masked_out / "test-reports" / "monitor-pii.jsonl").glob("*-report.json")
    (row,) = json.loads(report.read_text("utf-8"))["rows"]
    assert row["question"] == "Mail my payslip to <EMAIL_1> please"
    assert row["answer"] == "Sent to <EMAIL_1>; call <PHONE_1> if it is missing."
    assert monitor(log, plain_out, "--no-mask-pii")[0] == 0
    (report,) = (plain_out / "test-reports" / "monitor-pii.jsonl").glob("*-report.json")
    assert json.loads(report.read_text("utf-8"))["rows"][0]["question"] == record["question"]


def test_each_monitor_run_appends_averages_and_pass_rates_to_the_history(
    tmp_path: Path,
) -> None:
    logs, out = tmp_path / "logs", tmp_path / "out"
    logs.mkdir()
    lines = (SAMPLES / "interactions.jsonl").read_text("utf-8").splitlines()
    (logs / "a.jsonl").write_text("\n".join(lines[:2]) + "\n", "utf-8")
    assert monitor(logs, out)[0] == 0
    leaky = json.loads(lines[3])
    leaky["answer"] = "Ask HR at hr-team@example.com or on +44 20 7946 0958."
    (logs / "b.jsonl").write_text("\n".join([lines[2], json.dumps(leaky)]) + "\n", "utf-8")
    assert monitor(logs, out, "--no-mask-pii")[0] == 0
    history = json.loads((out / "test-reports" / "monitor-logs" / "history.json").read_text())
    first, second = history["runs"]
    assert first["items"] == 2 and second["items"] == 2
    assert first["pass_rates"]["PII in answer"] == 1.0
    assert second["pass_rates"]["PII in answer"] == 0.5  # one answer of two leaks
    assert set(second["averages"]) == set(second["pass_rates"])
    page = (out / "test-reports" / "monitor-logs" / "history.html").read_text("utf-8")
    assert "pass rate 50%" in page


def test_logged_agent_steps_reach_the_agent_metrics_masked(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, output = monitor(
        SAMPLES / "otel-genai-traces.json", out, "--metric", "Agent sanity check", "--json"
    )
    assert code == 0, output
    assert json.loads(output)["verdict"]["outcome"] == "passed"  # --fail-on errors
    (report,) = (out / "test-reports" / "monitor-otel-genai-traces.json").glob("*-report.json")
    rows = {r["case_id"]: r for r in json.loads(report.read_text("utf-8"))["rows"]}
    failed = rows["5b8aa5a2d2c872e8321cf37308d69df2"]
    assert failed["steps"][0]["name"] == "lookup_policy" and failed["steps"][0]["failed"]
    (result,) = failed["results"]
    assert result["score"] == 0.0 and "failed step: lookup_policy" in result["reason"]
    log = tmp_path / "agent.jsonl"
    record = {
        "id": "s1",
        "question": "Book leave for jo@corp.io",
        "answer": "Booked.",
        "steps": [{"name": "hr/book", "arguments": {"employee": "jo@corp.io"}}],
        "timestamp": "2026-01-31T10:00:00Z",
    }
    log.write_text(json.dumps(record) + "\n", "utf-8")
    assert monitor(log, out, "--metric", "Agent sanity check")[0] == 0
    (report,) = (out / "test-reports" / "monitor-agent.jsonl").glob("*-report.json")
    (row,) = json.loads(report.read_text("utf-8"))["rows"]
    assert row["steps"][0]["arguments"] == {"employee": "<EMAIL_1>"}
    assert row["question"] == "Book leave for <EMAIL_1>"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--format", "nope"], "--format 'nope': no such source"),
        (["--map", "reply=x"], "--map: unknown field(s) reply"),
        (["--since", "last week"], "--since 'last week': give a duration"),
        (["--lateness", "1y"], "--lateness '1y': give a duration"),
        (["--sample", "0"], "--sample '0': give a count"),
        (["--name", "../x"], "--name '../x': use letters"),
    ],
)
def test_bad_options_are_refused_before_anything_is_read(
    tmp_path: Path, extra: list[str], message: str
) -> None:
    code, output = monitor(SAMPLES / "interactions.jsonl", tmp_path, *extra)
    assert code == 2 and message in output.replace("\n", " ")
    assert not (tmp_path / "monitor").exists()


def test_since_takes_nothing_older(tmp_path: Path) -> None:
    code, output = monitor(
        SAMPLES / "interactions.jsonl", tmp_path, "--since", "2026-01-31T09:20:00Z"
    )
    assert code == 0, output
    assert "2 new, 2 to score, 0 already taken or duplicated, 0 too late, 2 before --since" in (
        output.replace("\n", " ")
    )
