"""The response cache: key, memory, folder and run-bucket persistence, what is not cached, and
concurrent identical asks sharing one call."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from pydantic import BaseModel

from evalrunner.judge import JudgeError, JudgeParseError, Message
from evalrunner.judge.cache import (
    CachedReply,
    FolderStore,
    ResponseCache,
    cache_key,
)
from evalrunner.judge.factory import build_cache
from evalrunner.storage import RunStore
from tests.support.judge_stub import JudgeStub, StubReply


class Statements(BaseModel):
    statements: list[str]


GOOD = '{"statements": ["Leave is 25 days.", "It accrues monthly."]}'
MESSAGES = [
    Message(role="system", content="Split the answer into statements."),
    Message(role="user", content="Answer: Leave is 25 days and accrues monthly."),
]


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALRUNNER_SECRET_JUDGE_STUB_KEY", raising=False)


def ask(judge: Any, messages: list[Message] = MESSAGES, **kwargs: Any) -> Any:
    return judge.ask(messages, Statements, purpose="statements", **kwargs)


def test_key_covers_model_messages_schema_and_logprobs() -> None:
    class Other(BaseModel):
        statements: list[int]

    base = cache_key("m", MESSAGES, Statements, False)
    assert base == cache_key("m", list(MESSAGES), Statements, False)  # deterministic
    assert len(base) == 64 and int(base, 16) >= 0
    changed = [
        cache_key("m2", MESSAGES, Statements, False),
        cache_key("m", MESSAGES[:1], Statements, False),
        cache_key("m", [*MESSAGES[:1], Message(role="user", content="x")], Statements, False),
        cache_key("m", MESSAGES, Other, False),
        cache_key("m", MESSAGES, Statements, True),
    ]
    assert base not in changed and len(set(changed)) == len(changed)


def test_second_identical_ask_is_a_cache_hit(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply(
        GOOD, prompt_tokens=50, completion_tokens=12
    )
    judge = judge_stub.judge()
    first = ask(judge)
    second = ask(judge)
    assert len(judge_stub.requests) == 1
    assert not first.cached and second.cached
    assert second.value == first.value and second.value is not first.value
    assert second.usage.as_dict() == {
        "calls": 0,
        "cached": 1,
        "input_tokens": 0,
        "output_tokens": 0,
        "retries": 0,
        "parse_failures": 0,
    }
    assert (judge.usage.calls, judge.usage.cached, judge.usage.input_tokens) == (1, 1, 50)
    ask(judge, logprobs=True)  # another key
    assert len(judge_stub.requests) == 2


def test_cache_off_asks_every_time(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: GOOD
    judge = judge_stub.judge(cache=False)
    assert ask(judge).cached is False and ask(judge).cached is False
    assert len(judge_stub.requests) == 2


def test_folder_cache_survives_the_judge(judge_stub: JudgeStub, tmp_path: Path) -> None:
    top = [{"{": -0.1}]
    judge_stub.responder = lambda messages, request: StubReply(
        GOOD, prompt_tokens=50, completion_tokens=12, top_logprobs=top
    )
    ask(judge_stub.judge(cache_dir=str(tmp_path)), logprobs=True)
    key = cache_key("stub-judge", MESSAGES, Statements, True)
    path = tmp_path / key[:2] / f"{key}.json"
    stored = json.loads(path.read_text("utf-8"))
    assert stored["text"] == GOOD and stored["model"] == "stub-judge"
    assert stored["usage"] == {"input_tokens": 50, "output_tokens": 12}
    assert stored["top_logprobs"] == top
    again = ask(judge_stub.judge(cache_dir=str(tmp_path)), logprobs=True)  # a new run
    assert again.cached and again.top_logprobs == top
    assert again.value.statements == ["Leave is 25 days.", "It accrues monthly."]
    assert len(judge_stub.requests) == 1


def test_run_bucket_cache_on_moto_s3(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: GOOD
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="runner-bucket")
        store = RunStore("runner-bucket", client=client)
        ask(judge_stub.judge(store=store))
        key = cache_key("stub-judge", MESSAGES, Statements, False)
        assert store.list_keys("judge-cache/") == [f"judge-cache/{key}.json"]
        assert store.get_json(f"judge-cache/{key}.json")["text"] == GOOD
        again = ask(judge_stub.judge(store=store))  # a re-run: fresh memory, same bucket
    assert again.cached and len(judge_stub.requests) == 1


def test_an_unreadable_bucket_cache_is_said_once_with_the_fix(
    judge_stub: JudgeStub, caplog: pytest.LogCaptureFixture
) -> None:
    """A store the role may not use (here: no such bucket) is not a silent miss: the first
    failed read and the first failed write each log a warning naming the fix, later ones
    are counted, and every ask is still judged."""
    judge_stub.responder = lambda messages, request: GOOD
    with mock_aws():
        store = RunStore("no-such-bucket", client=boto3.client("s3", region_name="us-east-1"))
        judge = judge_stub.judge(store=store)
        with caplog.at_level("DEBUG", logger="evalrunner.judge.cache"):
            for n in range(3):
                messages = [*MESSAGES, Message(role="user", content=f"case {n}")]
                ask(judge, messages)
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 2, warnings
    assert "cannot read" in warnings[0] and "cannot write" in warnings[1]
    assert all(
        "s3:GetObject and s3:PutObject on s3://no-such-bucket/judge-cache/*" in w for w in warnings
    )
    assert judge.cache is not None and judge.cache.failures == {"read": 3, "write": 3}
    assert len(judge_stub.requests) == 3


def test_a_missing_entry_is_a_quiet_miss(judge_stub: JudgeStub, caplog) -> None:
    judge_stub.responder = lambda messages, request: GOOD
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="runner-bucket")
        judge = judge_stub.judge(store=RunStore("runner-bucket", client=client))
        with caplog.at_level("WARNING", logger="evalrunner.judge.cache"):
            ask(judge)
    assert not caplog.records and judge.cache is not None and judge.cache.failures == {}


def test_cache_dir_wins_over_the_bucket(tmp_path: Path) -> None:
    with JudgeStub() as stub:
        config = stub.judge_config(cache_dir=str(tmp_path))
        cache = build_cache(config, store=object())  # type: ignore[arg-type]
    assert cache is not None and isinstance(cache.persistent, FolderStore)
    assert build_cache(config.model_copy(update={"cache": False})) is None


def test_parse_failures_are_not_cached(judge_stub: JudgeStub, tmp_path: Path) -> None:
    judge_stub.responder = lambda messages, request: "no JSON here"
    judge = judge_stub.judge(cache_dir=str(tmp_path))
    for _ in range(2):
        with pytest.raises(JudgeParseError):
            ask(judge)
    # within the run the failure is remembered: one bad reply costs one repair, not one per
    # metric that needs the same reply; both asks count as parse failures
    assert len(judge_stub.requests) == 2
    assert judge.usage.parse_failures == 2 and judge.usage.calls == 2
    assert list(tmp_path.rglob("*.json")) == []  # never stored: the next run asks again
    with pytest.raises(JudgeParseError, match="remembered"):
        ask(judge)
    with pytest.raises(JudgeParseError):
        ask(judge_stub.judge(cache_dir=str(tmp_path)))
    assert len(judge_stub.requests) == 4


def test_repaired_reply_is_cached(judge_stub: JudgeStub) -> None:
    replies = iter(["oops", GOOD])
    judge_stub.responder = lambda messages, request: next(replies)
    judge = judge_stub.judge()
    assert ask(judge).value.statements and ask(judge).cached
    assert len(judge_stub.requests) == 2


def test_concurrent_identical_asks_make_one_request(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply(GOOD, delay=0.3)
    judge = judge_stub.judge(cache=False)  # joining an ask in flight is not caching
    replies: list[Any] = []
    barrier = threading.Barrier(5)

    def work() -> None:
        barrier.wait()
        replies.append(ask(judge))

    threads = [threading.Thread(target=work) for _ in range(5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(judge_stub.requests) == 1
    assert sorted(r.cached for r in replies) == [False, True, True, True, True]
    assert len({id(r.value) for r in replies}) == 5  # each caller gets its own instance
    assert (judge.usage.calls, judge.usage.cached) == (1, 4)


def test_concurrent_identical_asks_share_a_failure(judge_stub: JudgeStub) -> None:
    judge_stub.responder = lambda messages, request: StubReply("down", status=400, delay=0.2)
    judge = judge_stub.judge()
    failures: list[BaseException] = []
    barrier = threading.Barrier(3)

    def work() -> None:
        barrier.wait()
        try:
            ask(judge)
        except JudgeError as exc:
            failures.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(failures) == 3 and len(judge_stub.requests) == 1
    assert all("HTTP 400" in str(f) for f in failures)


def test_memory_lru_and_broken_store() -> None:
    class Broken:
        def load(self, key: str) -> Any:
            raise OSError("disk on fire")

        def save(self, key: str, value: Any) -> None:
            raise OSError("disk on fire")

        def describe(self) -> str:
            return "broken"

    cache = ResponseCache(Broken(), entries=2)
    assert cache.get("a") is None  # a failing store is a miss
    for key in ("a", "b", "c"):
        cache.put(key, CachedReply(text=key))  # a failing write is only logged
    assert len(cache) == 2 and cache.get("a") is None and cache.get("c") is not None


def test_corrupt_cache_file_is_a_miss(judge_stub: JudgeStub, tmp_path: Path) -> None:
    key = cache_key("stub-judge", MESSAGES, Statements, False)
    path = tmp_path / key[:2] / f"{key}.json"
    path.parent.mkdir(parents=True)
    path.write_text('{"text": "not the schema"}', "utf-8")
    judge_stub.responder = lambda messages, request: GOOD
    reply = ask(judge_stub.judge(cache_dir=str(tmp_path)))
    assert not reply.cached and len(judge_stub.requests) == 1
    assert json.loads(path.read_text("utf-8"))["text"] == GOOD  # overwritten
