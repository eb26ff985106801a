"""Issue 32 item 4: ``evalrunner rescore RUN`` scores a finished run's stored answers with
other metrics and a judge, calls the target not once, and writes a new report set linked to
the original run (its baseline)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import evalrunner
from evalrunner.cli import app
from tests.support.catalog import restored_catalog
from tests.support.loopback_http import serve

from .test_judge_cli import answer_like_a_judge, judge_arg

runner = CliRunner()
#: Untrusted text a target may answer: a spreadsheet formula, markup, a control character.
HOSTILE = '=HYPERLINK("http://evil","x") <script>alert(1)</script> 25\x07 days'
SUITE = (
    "id,question,expected_answer\n"
    "q1,How many days of annual leave?,25 days\n"
    "q2,How many sick days?,10 days\n"
)


def first_run(tmp_path: Path) -> tuple[Path, dict, int]:
    """Run the suite against a loopback HTTP target; the reports folder, the summary and how
    many requests the target got."""
    suite = tmp_path / "hr.csv"
    suite.write_text(SUITE, encoding="utf-8")
    body = json.dumps({"answer": HOSTILE, "contexts": ["Leave: <b>25</b> days a year."]})
    out = tmp_path / "out"
    with serve(body.encode()) as (url, served):
        args = ["run", "--suite", str(suite), "--target", json.dumps({"url": url, "name": "hr"})]
        args += ["--out", str(out), "--metric", "Exact match", "--fail-on", "errors"]
        result = runner.invoke(app, [*args, "--json", "--no-preflight"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        calls = served.requests
    return out, json.loads(result.stdout), calls


def rows_of(out: Path, report: str) -> list[dict]:
    return json.loads((out / report).read_text("utf-8"))["rows"]


def test_rescore_with_a_judge_metric_calls_no_target_and_links_the_original(tmp_path, judge_stub):
    out, original, calls = first_run(tmp_path)
    assert calls == 2
    judge_stub.responder = answer_like_a_judge
    with serve(b'{"answer": "never asked"}') as (_, served):
        args = ["rescore", original["run_id"], "--out", str(out), "--metric", "Faithfulness"]
        args += ["--judge", judge_arg(judge_stub, tmp_path), "--json"]
        result = runner.invoke(app, args, catch_exceptions=False)
        assert served.requests == 0
    assert result.exit_code == 0, result.output
    again = json.loads(result.stdout)
    assert again["run_id"] != original["run_id"]
    assert "latency and token counts stay in the original run's reports" in result.output
    assert again["target"] == "hr" and again["target_kind"] == "logged"
    # linked to the original: it is the baseline, and the suite is named after it
    assert again["regression"]["baseline_run_id"] == original["run_id"]
    assert again["rescored_from"] == original["run_id"]
    assert again["suite"] == f"test-suites/rescore-{original['run_id']}.json"
    report = json.loads((out / again["reports"]["report"]).read_text("utf-8"))
    assert report["config"]["rescored_from"] == original["run_id"]
    html = (out / again["reports"]["html"]).read_text("utf-8")
    assert f"run <code>{original['run_id']}</code>" in html.split('id="rescored-from"')[1]
    assert original["rescored_from"] is None  # an ordinary run names none
    assert [m["metric"] for m in again["metrics"]] == ["Faithfulness"]
    (faith,) = again["metrics"]
    assert faith["count"] == 2 and faith["average"] == 1.0
    assert len(judge_stub.requests) == again["judge"]["calls"] > 0
    before = rows_of(out, original["reports"]["report"])
    after = rows_of(out, again["reports"]["report"])
    # the very answers and contexts the target gave, byte for byte (formula, markup, and
    # the control character as the first run replaced it)
    assert [r["answer"] for r in after] == [r["answer"] for r in before]
    assert after[0]["answer"] == HOSTILE.replace("\x07", "\ufffd")
    assert [r["contexts"] for r in after] == [r["contexts"] for r in before]
    assert [res["metric"] for res in after[0]["results"]] == ["Faithfulness"]
    # a second rescore is served from the judge cache: no new judge request
    sent = len(judge_stub.requests)
    args = ["rescore", str(out / again["reports"]["report"]), "--out", str(out)]
    args += ["--metric", "Faithfulness", "--judge", judge_arg(judge_stub, tmp_path), "--json"]
    cached = runner.invoke(app, args, catch_exceptions=False)
    assert cached.exit_code == 0, cached.output
    assert len(judge_stub.requests) == sent


def test_the_python_api_rescores_with_other_thresholds(tmp_path):
    out, original, _ = first_run(tmp_path)
    run = evalrunner.rescore(
        out / "test-reports" / "hr",
        metrics=["Rouge Metric"],
        thresholds={"ROUGE-L": 0.0},
        out=out,
    )
    summary = run.summary
    assert summary.regression is not None
    assert summary.regression.baseline_run_id == original["run_id"]
    assert summary.rescored_from == original["run_id"]
    rouge = next(m for m in summary.metrics if m.metric == "ROUGE-L")
    assert rouge.threshold == 0.0 and rouge.count == 2


def test_an_unknown_run_is_refused_with_exit_2(tmp_path):
    result = runner.invoke(app, ["rescore", "260101-000000-abcdef", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "no finished run with that id" in result.output


def test_a_run_without_answers_is_refused_with_exit_2(tmp_path):
    suite = tmp_path / "hr.csv"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "out"
    with serve(b"not json at all", content_type="text/html") as (url, _):
        args = ["run", "--suite", str(suite), "--target", json.dumps({"url": url, "name": "hr"})]
        args += ["--out", str(out), "--metric", "Exact match", "--fail-on", "never"]
        first = runner.invoke(app, [*args, "--json", "--no-preflight"], catch_exceptions=False)
    summary = json.loads(first.stdout)
    assert summary["target_errors"] == 2, first.output
    result = runner.invoke(app, ["rescore", summary["run_id"], "--out", str(out)])
    assert result.exit_code == 2
    assert "no stored answers to rescore" in result.output


def test_iterations_are_refused_with_a_message(tmp_path):
    suite = tmp_path / "hr.csv"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "out"
    with serve(b'{"answer": "25 days"}') as (url, _):
        args = ["run", "--suite", str(suite), "--target", json.dumps({"url": url, "name": "hr"})]
        args += ["--out", str(out), "--metric", "Exact match", "--iterations", "2"]
        first = runner.invoke(app, [*args, "--json", "--no-preflight", "--fail-on", "never"])
    run_id = json.loads(first.stdout)["run_id"]
    result = runner.invoke(app, ["rescore", run_id, "--out", str(out)])
    assert result.exit_code == 2
    assert "more than once (iterations)" in result.output


def test_a_case_the_target_never_answered_is_named_and_left_out(tmp_path):
    suite = tmp_path / "hr.csv"
    suite.write_text(SUITE, encoding="utf-8")
    out = tmp_path / "out"

    def respond(body: bytes) -> tuple[bytes, float]:
        # the sick-days question gets a reply that is no answer at all: a target error
        return (b"<html>oops</html>" if b"sick" in body else b'{"answer": "25 days"}'), 0.0

    with serve(respond) as (url, _):
        args = ["run", "--suite", str(suite), "--target", json.dumps({"url": url, "name": "hr"})]
        args += ["--out", str(out), "--metric", "Exact match", "--fail-on", "never"]
        first = runner.invoke(app, [*args, "--json", "--no-preflight"], catch_exceptions=False)
    original = json.loads(first.stdout)
    assert original["target_errors"] == 1, first.output
    args = ["rescore", original["run_id"], "--out", str(out), "--metric", "Exact match"]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    assert "not rescored: 1 case(s) the target never answered" in result.output
    assert "q2 (target_error)" in result.output
    assert [r["case_id"] for r in rows_of(out, json.loads(result.stdout)["reports"]["report"])] == [
        "q1"
    ]


def test_expected_tools_steps_and_categories_survive_a_rescore(tmp_path):
    calls: list[str] = []

    def agent(question: str) -> str:
        calls.append(question)
        return "Booked."

    case = {"id": "a", "question": "Book a room", "expected_answer": "Booked.", "categories": ["x"]}
    case |= {"expected_tools": ["hr/book"], "expected_steps": ["hr/search", {"name": "hr/book"}]}
    first = evalrunner.evaluate(
        [case], agent, metrics=["Exact match"], out=tmp_path, preflight=False
    )
    assert calls == ["Book a room"]
    again = evalrunner.rescore(first.summary.run_id, metrics=["Exact match"], out=tmp_path)
    assert calls == ["Book a room"]  # not called again
    keep = ("case_id", "question", "expected_answer", "answer", "categories")
    keep += ("expected_tools", "expected_steps")
    (before,) = rows_of(tmp_path, first.summary.reports.report)
    (after,) = rows_of(tmp_path, again.summary.reports.report)
    assert {k: after[k] for k in keep} == {k: before[k] for k in keep}
    assert after["expected_steps"][1]["name"] == "hr/book"


#: What a metric needs besides the answer: expected contexts and documents, the intent and
#: tool the suite expects, a condition; the target reports contexts, documents, intent, tool.
EXPECTING = [
    {
        "id": "q1",
        "question": "How many days of annual leave?",
        "expected_answer": "25 days",
        "expected_contexts": ["Leave: 25 days a year.", "Carry over 5 days."],
        "expected_documents": ["leave.pdf"],
        "expected_intent": "leave",
        "expected_tool": "hr_search",
        "condition": '"25" AND NOT "30"',
    },
    {
        "id": "q2",
        "question": "How many sick days?",
        "expected_answer": "10 days",
        "expected_contexts": ["Sick leave: 10 days."],
        "expected_documents": ["sick.pdf", "leave.pdf"],
        "expected_intent": "sickness",
        "expected_tool": "payroll",
        "condition": ["10", ["days", "weeks"]],
    },
]
NEEDING = ["Chunk match", "Retrieval rank", "Intent classification", "Tool choice"]
NEEDING += ["Text matching"]


def scores(out: Path, summary: dict) -> dict:
    """Every score, reason-free, by case and metric (what a fresh run and a rescore share)."""
    return {
        (row["case_id"], res["metric"]): (res["score"], res["status"], res["success"])
        for row in rows_of(out, summary["reports"]["report"])
        for res in row["results"]
    }


def test_a_rescore_scores_against_the_same_expectations_as_a_fresh_run(tmp_path):
    suite = tmp_path / "hr.json"
    suite.write_text(json.dumps(EXPECTING), encoding="utf-8")
    out = tmp_path / "out"

    def respond(body: bytes) -> tuple[bytes, float]:
        sick = b"sick" in body
        reply = {
            "answer": "10 days a year" if sick else "25 days a year",
            "contexts": [
                {
                    "text": "Sick leave: 10 days." if sick else "Leave: 25 days a year.",
                    "document": "sick.pdf" if sick else "other.pdf",
                }
            ],
            "documents": ["sick.pdf"] if sick else ["other.pdf", "leave.pdf"],
            "intent": "sickness" if sick else "holidays",
            "tool": "hr_search",
        }
        return json.dumps(reply).encode(), 0.0

    args = ["--out", str(out), "--fail-on", "never", "--json"]
    for metric in NEEDING:
        args += ["--metric", metric]
    with serve(respond) as (url, served):
        target = json.dumps({"url": url, "name": "hr"})
        fresh = runner.invoke(
            app, ["run", "--suite", str(suite), "--target", target, *args, "--no-preflight"]
        )
        assert fresh.exit_code == 0, fresh.output
        assert served.requests == 2
        original = runner.invoke(
            app,
            [
                "run",
                "--suite",
                str(suite),
                "--target",
                target,
                "--out",
                str(out),
                "--metric",
                "Exact match",
                "--fail-on",
                "never",
                "--json",
                "--no-preflight",
            ],
        )
        assert original.exit_code == 0, original.output
        assert served.requests == 4
        first = json.loads(original.stdout)
        rescored = runner.invoke(app, ["rescore", first["run_id"], *args])
        assert served.requests == 4  # the rescore called nothing
    assert rescored.exit_code == 0, rescored.output
    expected = scores(out, json.loads(fresh.stdout))
    got = scores(out, json.loads(rescored.stdout))
    assert got == expected
    # and the metrics really scored (none skipped for a missing expectation)
    for metric in ("Chunk match", "Reciprocal rank", "Intent correct", "Tool correct"):
        assert {got[(case, metric)][0] for case in ("q1", "q2")} <= {0.0, 0.5, 1.0}
        assert {got[(case, metric)][1] for case in ("q1", "q2")} == {"scored"}, metric
    assert got[("q1", "Intent correct")][0] == 0.0 and got[("q2", "Intent correct")][0] == 1.0
    assert got[("q1", "Tool correct")][0] == 1.0 and got[("q2", "Tool correct")][0] == 0.0
    assert got[("q1", "Model passes")][0] == 1.0
    rows = rows_of(out, json.loads(rescored.stdout)["reports"]["report"])
    assert rows[1]["condition"] == ["10", ["days", "weeks"]]
    assert rows[0]["expected_contexts"] == EXPECTING[0]["expected_contexts"]


def test_a_metric_of_your_own_reads_the_same_extra_columns_when_rescored(tmp_path):
    """A metric of the user's own reads the suite's extra columns after a rescore too; it
    registers in the process's catalog, which is put back after (restored_catalog)."""
    with restored_catalog():

        @evalrunner.metric(name="Right team", threshold=0.5)
        def right_team(sample: evalrunner.Sample) -> float:
            return 1.0 if sample.metadata.get("team") == "HR" else 0.0

        cases = [
            {"id": "a", "question": "Leave?", "expected_answer": "25", "team": "HR"},
            {"id": "b", "question": "Pay?", "expected_answer": "monthly", "team": "Finance"},
        ]
        first = evalrunner.evaluate(
            cases,
            lambda q: "ok",
            metrics=[right_team],
            out=tmp_path,
            preflight=False,
            fail_on="never",
        )
        again = evalrunner.rescore(
            first.summary.run_id, metrics=[right_team], out=tmp_path, fail_on="never"
        )
        before = rows_of(tmp_path, first.summary.reports.report)
        after = rows_of(tmp_path, again.summary.reports.report)
        assert [r["metadata"] for r in after] == [{"team": "HR"}, {"team": "Finance"}]
        scores = [[res["score"] for res in r["results"]] for r in after]
        assert scores == [[res["score"] for res in r["results"]] for r in before] == [[1.0], [0.0]]


def test_a_logged_agents_steps_are_rescored_as_the_original_scored_them(tmp_path):
    """A monitor run of OpenTelemetry traces scores the agent's logged steps; its rescore
    carries them (the suite's ``actual_steps``), so "Agent sanity check" gives the same
    scores, a failed step included, and the steps reach the new report unchanged."""
    out = tmp_path / "out"
    traces = Path(__file__).parents[2] / "test_suites" / "monitor" / "otel-genai-traces.json"
    args = ["--out", str(out), "--metric", "Agent sanity check", "--fail-on", "never", "--json"]
    first = runner.invoke(app, ["monitor", str(traces), *args], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    (report,) = (out / "test-reports" / "monitor-otel-genai-traces.json").glob("*-report.json")
    original = json.loads(report.read_text("utf-8"))
    assert any(row["steps"] for row in original["rows"])
    again = runner.invoke(app, ["rescore", original["run_id"], *args], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert "agent steps" not in again.output  # no note that steps were dropped
    rescored = json.loads(again.stdout)
    before = scores(out, {"reports": {"report": report.relative_to(out).as_posix()}})
    after = scores(out, rescored)
    assert after == before
    assert {status for _, status, _ in after.values()} == {"scored"}
    assert 0.0 in {score for score, _, _ in after.values()}  # the failed step still fails
    steps = {r["case_id"]: r["steps"] for r in original["rows"]}
    assert {r["case_id"]: r["steps"] for r in rows_of(out, rescored["reports"]["report"])} == steps


def test_a_run_given_by_its_folder_is_rescored_beside_it_and_compared_with_it(
    tmp_path, monkeypatch
):
    """Without --out, the new reports go to the reports folder that holds the run (a
    project cell's <output>/<target>/<suite>/, or any --out of the first run), so the
    original run is found as the baseline; before, they went to ./evalrunner-out, where it
    is not, and the comparison was silently lost."""
    out, original, _ = first_run(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    args = ["rescore", str(out / "test-reports" / "hr"), "--metric", "Token F1", "--json"]
    result = runner.invoke(app, [*args, "--fail-on", "never"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    again = json.loads(result.stdout)
    assert again["regression"]["baseline_run_id"] == original["run_id"]
    assert (out / again["reports"]["summary"]).is_file()
    assert not (elsewhere / "evalrunner-out").exists()
    run = evalrunner.rescore(out / again["reports"]["report"], metrics=["Token F1"])
    assert run.summary.regression is not None
    assert run.summary.regression.baseline_run_id == again["run_id"]
    assert not (elsewhere / "evalrunner-out").exists()
