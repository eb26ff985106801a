"""Issue 5's acceptance through the CLI: judge metrics against an OpenAI-compatible server
(the loopback stub), skipped without a judge, parse failures counted for a garbage judge."""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from evalrunner.cli import app

runner = CliRunner()
SUITE = (
    "question,expected_answer\n"
    "How many days of annual leave do full-time employees get per year?,"
    "Full-time employees receive 25 days of paid annual leave per calendar year.\n"
    "How many days of paid sick leave do employees get?,Employees get 10 days of paid sick leave.\n"
)
DEMO = '{"lambdaArn": "evalrunner-demo-hr"}'


def answer_like_a_judge(messages, request):
    """Plausible replies: statements for extraction prompts, all-true verdicts otherwise."""
    prompt = "\n".join(m["content"] for m in messages)
    count = re.search(r"with exactly (\d+) entries", prompt)
    if count:
        n = int(count.group(1))
        if '"checks"' in prompt:  # Faithfulness and Answer Relevancy share this call
            check = {"reason": "in chunk 1", "supported": True, "relevant": True}
            return {"checks": [check] * n}
        return {"verdicts": [{"reason": "supported by chunk 1", "verdict": True}] * n}
    return {"statements": ["Employees receive paid annual leave.", "The amount is 25 days."]}


def run(tmp_path, *extra):
    suite = tmp_path / "hr.csv"
    suite.write_text(SUITE, encoding="utf-8")
    result = runner.invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            DEMO,
            "--out",
            str(tmp_path / "out"),
            "--metric",
            "Faithfulness",
            "--json",
            *extra,
        ],
        catch_exceptions=False,
    )
    return result


def judge_arg(stub, tmp_path):
    return json.dumps(
        {
            "openai": {"base_url": stub.url, "model": "stub-judge"},
            "cache_dir": str(tmp_path / "judge-cache"),
            "max_retries": 1,
        }
    )


def test_faithfulness_with_an_openai_compatible_judge(tmp_path, judge_stub):
    judge_stub.responder = answer_like_a_judge
    result = run(tmp_path, "--judge", judge_arg(judge_stub, tmp_path))
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    (faith,) = [m for m in summary["metrics"] if m["metric"] == "Faithfulness"]
    assert faith["count"] == 2 and faith["average"] == 1.0 and faith["errored"] == 0
    judge = summary["judge"]
    # statements + verdicts per case; identical prompts (same statements, same context) are
    # answered once and served from the cache the second time
    assert judge["cases"] == 2 and judge["calls"] + judge["cached"] == 4
    # one more request than the run's calls: the pre-flight probe, uncached and not billed
    assert len(judge_stub.requests) == judge["calls"] + 1
    assert "ok" in judge_stub.requests[0].prompt
    sent = len(judge_stub.requests)
    # a re-run of unchanged cases is served from the cache: no new request but the probe
    again = run(tmp_path, "--judge", judge_arg(judge_stub, tmp_path))
    assert again.exit_code == 0 and len(judge_stub.requests) == sent + 1
    assert json.loads(again.stdout)["judge"]["cached"] == 4


def test_without_a_judge_the_metric_is_skipped_with_a_reason(tmp_path):
    result = run(tmp_path)
    # the only metric was not scored: not measured (exit 4), not a pass
    assert result.exit_code == 4, result.output
    summary = json.loads(result.stdout)
    assert summary["verdict"]["reasons"] == ["no metric scored any case: see the problems for why"]
    (faith,) = [m for m in summary["metrics"] if m["metric"] == "Faithfulness"]
    assert faith["skipped"] == 2 and faith["count"] == 0 and faith["average"] is None
    details = next((tmp_path / "out").rglob("*-details.csv")).read_text("utf-8-sig")
    assert "no LLM judge configured" in details


def test_a_garbage_judge_gives_parse_failures_not_a_crash(tmp_path, judge_stub):
    judge_stub.responder = lambda messages, request: "I refuse to answer in JSON, sorry!"
    result = run(tmp_path, "--judge", judge_arg(judge_stub, tmp_path))
    # every judged case errored: the run is not measured (exit 4), never a pass
    assert result.exit_code == 4, result.output
    summary = json.loads(result.stdout)
    assert summary["verdict"]["too_many_errors"][0]["metric"] == "Faithfulness"
    (faith,) = [m for m in summary["metrics"] if m["metric"] == "Faithfulness"]
    assert faith["errored"] == 2 and faith["average"] is None  # never NaN, never a silent 0
    assert summary["judge"]["parse_failures"] == 2
    assert any(p["type"] == "parsing_failures" for p in summary["problems"])
    details = next((tmp_path / "out").rglob("*-details.csv")).read_text("utf-8-sig")
    assert "parsing failure" in details and "nan" not in details.lower().split(",")


def test_judge_timeout_sets_the_judges_per_call_timeout(tmp_path, judge_stub):
    """--judge-timeout reaches the judge: a judge slower than it times out (named in the
    error), while the same judge within it answers."""
    from tests.support.judge_stub import StubReply

    def slow(messages, request):
        return StubReply(json.dumps(answer_like_a_judge(messages, request)), delay=1.0)

    judge_stub.responder = slow
    judge = json.dumps(
        {
            "openai": {"base_url": judge_stub.url, "model": "stub-judge"},
            "max_retries": 0,
            "cache": False,
        }
    )
    result = run(
        tmp_path,
        "--judge",
        judge,
        "--judge-timeout",
        "0.3",
        "--no-preflight",
        "--fail-on",
        "errors",
    )
    summary = json.loads(result.stdout)
    (faith,) = [m for m in summary["metrics"] if m["metric"] == "Faithfulness"]
    assert faith["errored"] == 2, result.output
    details = (tmp_path / "out").rglob("*details.csv")
    text = "".join(p.read_text(encoding="utf-8") for p in details)
    assert "timeout_seconds=0.3" in text


def test_judge_timeout_without_any_judge_is_refused(tmp_path, monkeypatch):
    monkeypatch.delenv("EVALRUNNER_JUDGE", raising=False)
    config = tmp_path / "config.json"
    config.write_text('{"default_metrics": ["Exact match"]}', encoding="utf-8")
    monkeypatch.setenv("EVALRUNNER_CONFIG", str(config))  # a config file with no judge
    result = run(tmp_path, "--judge-timeout", "300")
    assert result.exit_code == 2
    assert "--judge-timeout" in result.output and "no judge is configured" in result.output
