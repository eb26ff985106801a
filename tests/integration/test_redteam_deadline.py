"""The run event's ``redteam`` writing honours Prepare's deadline (Lambda's 15 minutes).

The up-front bound counts judge calls × ``timeout_seconds`` but not retries: a judge that
times out on every attempt could push an accepted event past Lambda's limit ("Task timed
out", nothing said). The handler passes the time its context has left, less a margin for
storing the run, as a deadline; the writing asks no judge call, and no retry, that could
not finish before it, and what is left unwritten is a plugin untested, as when the judge
fails on it. No wall clock is asserted: each deadline here allows a known number of calls
(the judge's timeout is seconds, Prepare's setup before the first call milliseconds), and
the judge stub's requests say which were made.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.judge.base import JudgeError
from evalrunner.pipeline.context import Runtime, Settings
from evalrunner.redteam.model import BASE, GRADER, STRATEGY_KEY
from evalrunner.redteam.prepare import ATTACKS_PREFIX
from evalrunner.run import RunConfig
from lambdas import prepare
from tests.support.catalog import restored_catalog
from tests.support.judge_stub import JudgeStub, StubReply
from tests.support.redteam import PURPOSE, RedTeamJudge
from tests.support.suite_bucket import suite_store

from .test_redteam_event import SUITE, WRITING

pytestmark = pytest.mark.slow

runner = CliRunner()

#: In the prompt that asks for system-prompt-extraction attacks only.
EXTRACTION = "reveal its system prompt or hidden"
TRANSLATE = "Translate the text"


@pytest.fixture(autouse=True)
def _catalog_restored() -> Iterator[None]:
    with restored_catalog("evalrunner.redteam.grader"):
        yield


def context_with(seconds: float) -> SimpleNamespace:
    """A Lambda context with ``seconds`` left after Prepare's margin for storing the run."""
    left_ms = int((prepare.MARGIN_SECONDS + seconds) * 1000)
    return SimpleNamespace(
        function_name="evalrunner-prepare",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:evalrunner-prepare",
        memory_limit_in_mb=1024,
        aws_request_id="r-1",
        get_remaining_time_in_millis=lambda: left_ms,
    )


def event(stub: JudgeStub, timeout: float, **redteam: Any) -> dict[str, Any]:
    return {
        "key": "test-suites/s.csv",
        "iterations": 1,
        "target": {"url": "http://127.0.0.1:9/ask"},
        "judge": {
            "openai": {"base_url": stub.url, "model": "stub"},
            "timeout_seconds": timeout,
            "max_retries": 4,
            "cache": False,
        },
        "redteam": {"purpose": PURPOSE, "num_tests": 2, "seed": 7, **redteam},
        "run_id": "rt-1",
    }


def asked(stub: JudgeStub, text: str) -> int:
    return sum(1 for r in stub.requests if text in r.prompt)


def test_a_plugin_whose_judge_call_cannot_finish_in_time_is_not_retried_and_is_untested(
    judge_stub: JudgeStub,
) -> None:
    """The judge never answers for one plugin: its first attempt times out (5 s) with 2.5 s
    left before the deadline, so no retry is made (old: all 5 attempts, past the deadline);
    the other plugin is written and run, and the run says what it did not test."""
    healthy = RedTeamJudge()

    def hanging(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        if EXTRACTION in messages[-1]["content"]:
            return StubReply(content="never", delay=60)
        return healthy(messages, request)

    judge_stub.responder = hanging
    rt = event(judge_stub, 5, plugins=["system-prompt-extraction", "prompt-injection"])
    with suite_store(SUITE) as store:
        handler = prepare.build(Runtime(s3_client=store.s3, settings=Settings(bucket=store.bucket)))
        handler({"event": rt}, context_with(7.5))
        assert asked(judge_stub, EXTRACTION) == 1  # the first attempt, no retry
        assert asked(judge_stub, WRITING) == 2
        manifest = store.get_json(store.manifest_key("rt-1"))
        assert {i["case"]["metadata"]["redteam_plugin"] for i in manifest} == {"prompt-injection"}
        config = RunConfig.model_validate(store.get_json(store.run_key("rt-1")))
        (untested,) = config.evaluator_options[GRADER]["untested"]
        assert untested.startswith("system-prompt-extraction: the judge could not write attacks")
        assert "deadline" in untested
        # not stored as the full plan: the next run writes the missing plugin again
        (key,) = store.list_keys(ATTACKS_PREFIX)
        assert store.get_json(key)["complete"] is False


def test_translations_that_cannot_finish_in_time_are_not_asked(judge_stub: JudgeStub) -> None:
    """The plugin's attacks take 3 s to come back; 5 s are then left and a translation may
    take 6 s: none is asked, and the language strategy is untested."""
    healthy = RedTeamJudge()

    def slow(messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        reply = healthy(messages, request)
        if WRITING in messages[-1]["content"]:
            return StubReply(content=json.dumps(reply), delay=3)
        return reply

    judge_stub.responder = slow
    rt = event(
        judge_stub,
        6,
        plugins=["prompt-injection"],
        strategies=["language"],
        language="German",
    )
    with suite_store(SUITE) as store:
        handler = prepare.build(Runtime(s3_client=store.s3, settings=Settings(bucket=store.bucket)))
        handler({"event": rt}, context_with(8))
        assert asked(judge_stub, WRITING) == 1
        assert asked(judge_stub, TRANSLATE) == 0
        manifest = store.get_json(store.manifest_key("rt-1"))
        # the two attacks as written, no translated copy
        assert [i["case"]["metadata"][STRATEGY_KEY] for i in manifest] == [BASE, BASE]
        config = RunConfig.model_validate(store.get_json(store.run_key("rt-1")))
        (untested,) = config.evaluator_options[GRADER]["untested"]
        assert untested.startswith("language: the judge failed on 2 of 2 attack(s)")


def test_a_deadline_that_allows_no_call_fails_prepare_with_why_and_asks_nothing(
    judge_stub: JudgeStub,
) -> None:
    judge_stub.responder = RedTeamJudge()
    rt = event(judge_stub, 3, plugins=["prompt-injection"])
    with suite_store(SUITE) as store:
        handler = prepare.build(Runtime(s3_client=store.s3, settings=Settings(bucket=store.bucket)))
        with pytest.raises(JudgeError, match="the judge wrote no attack") as raised:
            handler({"event": rt}, context_with(1))
        assert "judge.timeout_seconds" in str(raised.value)
        assert judge_stub.requests == []
        assert store.list_keys(ATTACKS_PREFIX) == []


def test_locally_the_deadline_is_the_function_timeout_asked_for(
    tmp_path: Path, judge_stub: JudgeStub
) -> None:
    """``evalrunner start --event`` has no Lambda limit (the attacks are written, every
    retry allowed) unless ``--function-timeout`` sets one; then Prepare's writing honours it
    as deployed: with 1 s left after the margin and a 3 s judge timeout, nothing is asked
    and the run fails saying why."""
    judge_stub.responder = RedTeamJudge()
    rt = event(judge_stub, 3, plugins=["prompt-injection"])
    rt.update(target={"url": "http://127.0.0.1:9/ask"})
    del rt["run_id"]
    (tmp_path / "s.csv").write_bytes(SUITE)
    path = tmp_path / "event.json"
    path.write_text(json.dumps(rt), encoding="utf-8")
    args = ["start", "--event", str(path), "--json", "--no-preflight", "--fail-on", "errors"]
    limit = str(prepare.MARGIN_SECONDS + 1)
    limited = runner.invoke(app, [*args, "--out", str(tmp_path / "a"), "--function-timeout", limit])
    assert limited.exit_code == 3, limited.output
    assert "not asked for 'red team: prompt-injection attacks'" in limited.output
    assert judge_stub.requests == []
    runner.invoke(app, [*args, "--out", str(tmp_path / "b")])  # no limit: written
    assert asked(judge_stub, WRITING) == 1


def test_function_timeout_is_refused_for_a_deployed_start(tmp_path: Path) -> None:
    path = tmp_path / "event.json"
    valid = {"key": "test-suites/s.csv", "iterations": 1, "target": {"url": "http://h:9/a"}}
    path.write_text(json.dumps(valid), encoding="utf-8")
    args = ["start", "--event", str(path), "--aws", "--function-timeout", "100"]
    result = runner.invoke(app, [*args, "--bucket", "b", "--state-machine-arn", "arn:x"])
    assert result.exit_code == 2, result.output
    assert "--function-timeout is for a local run" in result.output
