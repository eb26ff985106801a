"""The pytest plugin as a user's test session sees it (pytester): a suite file collected as one
item per case, and evalrunner.assert_case with CPU metrics and with a configured judge."""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from pathlib import Path

import pytest

from .test_judge_cli import answer_like_a_judge, judge_arg

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]

SUITE = """id,question,expected_answer
leave,How many days of leave?,You get 25 days of leave.
sick,How many sick days?,You get 10 sick days.
pension,What is the pension match?,The company matches 6 percent.
wrong,Who is the CEO?,The CEO is Ada Lovelace.
broken,Please explode,Nothing.
unexpected,What is the dress code?,
"""

BOT = """
ANSWERS = {
    "How many days of leave?": "You get 25 days of leave.",
    "How many sick days?": "You get 10 sick days.",
    "What is the pension match?": "The company matches 6 percent.",
    "Who is the CEO?": "I am not sure who runs the company.",
    "What is the dress code?": "Smart casual.",
}


def answer(question):
    if "explode" in question:
        raise RuntimeError("the bot failed on purpose")
    return ANSWERS[question], ["policy text"]
"""


def plugin_args() -> list[str]:
    """Load the plugin by its entry point when this environment has it installed, else by
    name (a checkout whose installed metadata predates the plugin)."""
    names = {ep.name for ep in importlib.metadata.entry_points(group="pytest11")}
    return [] if "evalrunner" in names else ["-p", "evalrunner.pytest_plugin"]


@pytest.fixture(autouse=True)
def _this_checkout(monkeypatch):
    """The inner sessions import evalrunner from this checkout."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def run_pytest(pytester, *args):
    # A subprocess: an in-process inner session unloads what it imported (numpy cannot be
    # loaded twice in one process), and a user's session is a process of its own anyway.
    return pytester.runpytest_subprocess(*plugin_args(), *args)


def test_the_plugin_is_declared_as_a_pytest11_entry_point():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["entry-points"]["pytest11"] == {"evalrunner": "evalrunner.pytest_plugin"}
    assert hasattr(importlib.import_module("evalrunner.pytest_plugin"), "pytest_collect_file")


def test_a_six_case_suite_is_six_test_items(pytester, tmp_path):
    pytester.makefile(".csv", hr=SUITE)
    pytester.makepyfile(hr_bot_plugin_test=BOT)
    spec = {
        "suite": "hr.csv",
        "target": "hr_bot_plugin_test:answer",
        "metrics": ["Rouge Metric"],
        "thresholds": {"ROUGE-L": 0.6},
    }
    (pytester.path / "hr.evalrunner.json").write_text(json.dumps(spec), encoding="utf-8")

    result = run_pytest(
        pytester, "-v", "--evalrunner-out", str(tmp_path / "out"), "hr.evalrunner.json"
    )

    result.assert_outcomes(passed=3, failed=4)
    result.stdout.fnmatch_lines(
        [
            "*hr.evalrunner.json::leave PASSED*",
            "*hr.evalrunner.json::sick PASSED*",
            "*hr.evalrunner.json::pension PASSED*",
            "*hr.evalrunner.json::wrong FAILED*",
            "*hr.evalrunner.json::broken FAILED*",
            "*hr.evalrunner.json::unexpected FAILED*",
            "*hr.evalrunner.json::run verdict FAILED*",
        ]
    )
    # the run's verdict, as the CLI would exit with it: one failed call in six is too many
    result.stdout.fnmatch_lines(
        ["*the run's verdict: NOT MEASURED*", "*1 of 6 (17%) target calls failed*"]
    )
    # a case nothing could measure fails with why, it is not skipped
    result.stdout.fnmatch_lines(
        [
            "*case unexpected failed:*",
            "*none of its gated metrics could be scored*",
            "*ROUGE-L: skipped: the case has no expected answer*",
        ]
    )
    result.stdout.fnmatch_lines(["*case wrong failed:*", "*ROUGE-L: 0.* (threshold 0.6)*"])
    result.stdout.fnmatch_lines(["*case broken failed:*", "*target_error*failed on purpose*"])
    # one run for the six items, its reports where the option said
    reports = list((tmp_path / "out" / "test-reports" / "answer").glob("*-summary.json"))
    assert len(reports) == 1
    assert json.loads(reports[0].read_text("utf-8"))["cases"] == 6


def test_the_run_verdict_item_follows_the_specs_policy(pytester, tmp_path):
    """``fail_on`` in the suite file reaches the run's verdict: with "never" and the
    error share raised, the failing cases still fail, and the run verdict passes."""
    pytester.makefile(".csv", hr=SUITE)
    pytester.makepyfile(hr_bot_plugin_test=BOT)
    spec = {
        "suite": "hr.csv",
        "target": "hr_bot_plugin_test:answer",
        "metrics": ["Rouge Metric"],
        "thresholds": {"ROUGE-L": 0.6},
        "fail_on": "never",
    }
    (pytester.path / "hr.evalrunner.json").write_text(json.dumps(spec), encoding="utf-8")
    result = run_pytest(
        pytester, "-v", "--evalrunner-out", str(tmp_path / "out"), "hr.evalrunner.json"
    )
    result.assert_outcomes(passed=4, failed=3)
    result.stdout.fnmatch_lines(["*hr.evalrunner.json::run verdict PASSED*"])


def test_a_bad_suite_target_fails_every_item_with_the_message(pytester, tmp_path):
    pytester.makefile(".csv", hr=SUITE)
    spec = {"suite": "hr.csv", "target": {"url": "ftp://nowhere"}, "metrics": ["Rouge Metric"]}
    (pytester.path / "hr.evalrunner.json").write_text(json.dumps(spec), encoding="utf-8")
    result = run_pytest(pytester, "--evalrunner-out", str(tmp_path / "out"))
    result.assert_outcomes(failed=7)  # the six cases and the run's verdict
    result.stdout.fnmatch_lines(
        ["*the suite run failed: The event is not valid:*", "*target.url: 'ftp://nowhere'*"]
    )


ASSERT_TESTS = """
import pytest
import evalrunner

def test_good_answer():
    evalrunner.assert_case(
        question="How many days of leave?",
        answer="You get 25 days of leave.",
        contexts=["Leave policy: 25 days."],
        expected_answer="You get 25 days of leave.",
        metrics={"ROUGE-L": 0.8, "Exact match": 0.5},
    )

def test_bad_answer():
    evalrunner.assert_case(
        question="How many days of leave?",
        answer="Ten.",
        expected_answer="You get 25 days of leave.",
        metrics={"ROUGE-L": 0.8},
    )

def test_judge_metric():
    run = evalrunner.assert_case(
        question="How many days of annual leave do full-time employees get per year?",
        answer="Full-time employees receive 25 days of paid annual leave.",
        contexts=["Full-time employees receive 25 days of paid annual leave per year."],
        metrics={"Faithfulness": 0.8},
    )
    assert run.summary.judge.calls > 0
"""


def test_assert_case_offline_without_a_judge(pytester):
    pytester.makepyfile(test_assertions=ASSERT_TESTS)
    result = run_pytest(pytester, "-v")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*test_good_answer PASSED*"])
    result.stdout.fnmatch_lines(
        ["*AssertionError: 1 of 1 metrics failed:*", "*ROUGE-L: 0.* (threshold 0.8) FAILED*"]
    )
    # without a judge the judge metric is not scored, and that is a failure, not a pass
    result.stdout.fnmatch_lines(["*Faithfulness: no score (threshold 0.8) FAILED: skipped*"])


def test_assert_case_with_the_configured_judge(pytester, judge_stub, tmp_path):
    judge_stub.responder = answer_like_a_judge
    pytester.makepyfile(test_assertions=ASSERT_TESTS)
    result = run_pytest(pytester, "-v", "--evalrunner-judge", judge_arg(judge_stub, tmp_path))
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*test_judge_metric PASSED*"])
    assert judge_stub.requests


CONVERSATIONS = """conversation_id,question,condition
name,My name is Ana.,
name,What is my name?,Ana
city,I live in Paris.,
city,Where do I live?,Paris
"""

CHAT = """
def answer(question, conversation):
    said = " ".join(t.get("content", "") for t in conversation if t.get("role") == "user")
    if question == "What is my name?":
        return "Your name is Ana." if "Ana" in said else "I do not know."
    if question == "Where do I live?":
        return "I do not know."  # forgets cities
    return "Noted."
"""


def test_a_conversation_is_one_item_that_fails_on_its_failing_turn(pytester, tmp_path):
    """One item per conversation: it passes when every turn (and the conversation metrics)
    passed, and a failing turn fails it, named in the message."""
    pytester.makefile(".csv", chats=CONVERSATIONS)
    pytester.makepyfile(chat_bot_plugin_test=CHAT)
    spec = {
        "suite": "chats.csv",
        "target": "chat_bot_plugin_test:answer",
        "metrics": ["Text matching"],
    }
    (pytester.path / "chats.evalrunner.json").write_text(json.dumps(spec), encoding="utf-8")

    result = run_pytest(
        pytester, "-v", "--evalrunner-out", str(tmp_path / "out"), "chats.evalrunner.json"
    )

    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*chats.evalrunner.json::name PASSED*",
            "*chats.evalrunner.json::city FAILED*",
            "*chats.evalrunner.json::run verdict FAILED*",
        ]
    )
    result.stdout.fnmatch_lines(["*case city failed:*", "*(turn 2)*"])


def test_a_metric_of_the_users_own_gates_each_case_item(pytester, tmp_path):
    pytester.makefile(".csv", hr=SUITE)
    pytester.makepyfile(hr_bot_plugin_test=BOT)
    (pytester.path / "hr_metrics.py").write_text(
        "import evalrunner\n\n\n"
        '@evalrunner.metric(name="Says a number", threshold=1.0)\n'
        "def says_a_number(sample):\n"
        '    return 1.0 if any(c.isdigit() for c in sample.answer or "") else 0.0\n',
        encoding="utf-8",
    )
    spec = {
        "suite": "hr.csv",
        "target": "hr_bot_plugin_test:answer",
        "plugins": ["hr_metrics.py"],
        "metrics": ["Says a number"],
    }
    (pytester.path / "hr.evalrunner.json").write_text(json.dumps(spec), encoding="utf-8")

    result = run_pytest(
        pytester, "-v", "--evalrunner-out", str(tmp_path / "out"), "hr.evalrunner.json"
    )

    result.stdout.fnmatch_lines(
        [
            "*hr.evalrunner.json::leave PASSED*",
            "*hr.evalrunner.json::wrong FAILED*",
            "*hr.evalrunner.json::unexpected FAILED*",
        ]
    )
    result.stdout.fnmatch_lines(["*case wrong failed:*", "*Says a number: 0.0* (threshold 1.0)*"])
