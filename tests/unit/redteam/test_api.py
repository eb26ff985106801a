"""Planning a red-team run through the real OpenAI-compatible judge client (the loopback
stub): the same seed is answered from the judge cache, attack for attack; the purpose and the
judge are required."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner.errors import ConfigError
from evalrunner.redteam.api import plan
from tests.support.judge_stub import JudgeStub
from tests.support.redteam import PURPOSE, RedTeamJudge

TARGET = {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m", "send_contexts": "user"}}


def planned(stub: JudgeStub, cache: Path, seed: int):  # type: ignore[no-untyped-def]
    judge = {"openai": {"base_url": stub.url, "model": "j"}, "cache_dir": str(cache)}
    return plan(
        TARGET,
        judge=judge,
        purpose=PURPOSE,
        plugins="jailbreak,indirect-prompt-injection",
        strategies="language,leetspeak",
        num_tests=2,
        seed=seed,
    )


def test_the_same_seed_is_answered_from_the_cache(tmp_path: Path, judge_stub: JudgeStub) -> None:
    judge_stub.responder = RedTeamJudge()
    first = planned(judge_stub, tmp_path / "cache", 9)
    # 2 plugins written, 4 attacks translated, 2 planted documents translated
    assert (first.judge_calls, first.judge_cached) == (8, 0)
    again = planned(judge_stub, tmp_path / "cache", 9)
    assert (again.judge_calls, again.judge_cached) == (0, 8)
    assert again.rows == first.rows
    other = planned(judge_stub, tmp_path / "cache", 10)
    assert other.judge_calls == 2 + 6 and other.rows != first.rows


def test_a_purpose_and_a_judge_are_required(
    tmp_path: Path, judge_stub: JudgeStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    judge = {"openai": {"base_url": judge_stub.url, "model": "j"}}
    with pytest.raises(ConfigError, match="--purpose"):
        plan(TARGET, judge=judge, plugins="jailbreak")
    monkeypatch.delenv("EVALRUNNER_JUDGE", raising=False)
    config = tmp_path / "config.json"
    config.write_text("{}")
    monkeypatch.setenv("EVALRUNNER_CONFIG", str(config))
    with pytest.raises(ConfigError, match="needs an LLM judge"):
        plan(TARGET, judge=None, purpose=PURPOSE)
    assert not judge_stub.requests
