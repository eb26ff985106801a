"""The Prepare handler parses its event at the door (an :class:`EventSpec`) and hands the
typed core a parsed event: a bad event fails there, naming the field, before any bucket is
read or written; a good one returns Prepare's output as the state machine reads it."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from evalrunner.errors import ConfigError, EventError, SuiteError
from evalrunner.event import ENV_CONCURRENCY_CAP
from evalrunner.input_limits import SUITE_ROWS_ENV, SuiteLimits
from evalrunner.pipeline.context import Runtime, Settings
from evalrunner.run import PrepareOutput, RunConfig
from evalrunner.run_defaults import (
    ENV_CONFIG,
    ENV_DEFAULT_METRICS,
    ENV_JUDGE,
    ENV_PROFILE,
    RunDefaults,
)
from evalrunner.targets.http import HttpSpec
from lambdas import prepare
from tests.support.suite_bucket import suite_store

SUITE = b"id,question,expected_answer\na,Q one?,alpha\nb,Q two?,beta\n"


def context() -> SimpleNamespace:
    return SimpleNamespace(
        function_name="evalrunner-prepare",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:evalrunner-prepare",
        memory_limit_in_mb=1024,
        aws_request_id="r-1",
        get_remaining_time_in_millis=lambda: 900_000,
    )


def test_a_bad_event_fails_at_the_door_before_any_bucket_is_needed() -> None:
    # no bucket is configured: reaching the store would fail with a ConfigError instead
    handler = prepare.build(Runtime(settings=Settings()))
    event = {"key": "test-suites/s.csv", "iterations": 0, "target": {"url": "http://x/ask"}}
    with pytest.raises(EventError, match="iterations"):
        handler({"event": event}, context())


def test_a_good_event_is_prepared_and_its_target_stored_as_written() -> None:
    target = {"timeout_seconds": 30, "url": "http://127.0.0.1:9/ask"}
    with suite_store(SUITE) as store:
        runtime = Runtime(s3_client=store.s3, settings=Settings(bucket=store.bucket))
        handler = prepare.build(runtime)
        raw = {"key": "test-suites/s.csv", "iterations": 2, "target": target, "run_id": "rp"}
        out = PrepareOutput.model_validate(handler({"event": raw}, context()))
        assert out.run_id == "rp" and out.item_count == 4 and out.bucket == store.bucket
        stored = store.get_json(store.run_key("rp"))
        assert stored["target"] == target and isinstance(stored["target"]["timeout_seconds"], int)
        config = RunConfig.model_validate(stored)
        assert isinstance(config.target, HttpSpec) and config.target.timeout_seconds == 30.0


def test_the_deployments_concurrency_cap_comes_from_the_runtimes_settings(monkeypatch):
    # read once, when the runtime is made: the environment after that does not count
    monkeypatch.delenv(ENV_CONCURRENCY_CAP, raising=False)
    with suite_store(SUITE) as store:
        environ = {ENV_CONCURRENCY_CAP: "5", "EVALRUNNER_BUCKET": store.bucket}
        runtime = Runtime(s3_client=store.s3, settings=Settings.from_env(environ))
        raw = {"key": "test-suites/s.csv", "iterations": 1, "target": {"url": "http://x/ask"}}
        out = prepare.build(runtime)({"event": {**raw, "max_concurrency": 50}}, context())
        assert out["max_concurrency"] == 5


def test_a_cap_that_is_not_a_number_is_refused_when_the_settings_are_read() -> None:
    with pytest.raises(ConfigError, match=ENV_CONCURRENCY_CAP):
        Settings.from_env({ENV_CONCURRENCY_CAP: "fifty"})


def test_the_suite_is_read_under_the_limits_of_the_runtimes_settings(monkeypatch):
    monkeypatch.delenv(SUITE_ROWS_ENV, raising=False)
    with suite_store(SUITE) as store:
        environ = {SUITE_ROWS_ENV: "1", "EVALRUNNER_BUCKET": store.bucket}
        settings = Settings.from_env(environ)
        assert settings.suite_limits == SuiteLimits(rows=1)
        handler = prepare.build(Runtime(s3_client=store.s3, settings=settings))
        raw = {"key": "test-suites/s.csv", "iterations": 1, "target": {"url": "http://x/ask"}}
        with pytest.raises(SuiteError, match=f"over the limit of 1 rows.*{SUITE_ROWS_ENV}"):
            handler({"event": raw}, context())


def test_an_events_defaults_come_from_the_runtimes_settings_not_the_environment_now(
    monkeypatch,
):
    # the operator's defaults are read once into the settings; what the environment says
    # when the event arrives (here: another judge and other metrics) does not count
    judge = {"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "settings-judge"}}
    with suite_store(SUITE) as store:
        environ = {
            "EVALRUNNER_BUCKET": store.bucket,
            ENV_CONFIG: os.environ[ENV_CONFIG],  # the empty file conftest names
            ENV_JUDGE: json.dumps(judge),
            ENV_DEFAULT_METRICS: json.dumps(["Faithfulness"]),
        }
        settings = Settings.from_env(environ)
        assert settings.run_defaults == RunDefaults(
            judge=(judge, ENV_JUDGE), metrics=["Faithfulness"]
        )
        monkeypatch.setenv(ENV_JUDGE, json.dumps({"openai": {"model": "environment-judge"}}))
        monkeypatch.setenv(ENV_DEFAULT_METRICS, json.dumps(["Answer Relevancy"]))
        handler = prepare.build(Runtime(s3_client=store.s3, settings=settings))
        raw = {"key": "test-suites/s.csv", "iterations": 1, "target": {"url": "http://x/ask"}}
        out = PrepareOutput.model_validate(handler({"event": raw}, context()))
        config = RunConfig.model_validate(store.get_json(store.run_key(out.run_id)))
        assert config.judge is not None and config.judge.openai is not None
        assert config.judge.openai.model == "settings-judge"
        assert "Faithfulness" in config.metrics and "Answer Relevancy" not in config.metrics


def test_a_bad_default_is_the_events_problem_in_the_same_words(monkeypatch) -> None:
    # reading the settings does not fail the container: the events needing the default do
    settings = Settings.from_env(
        {ENV_CONFIG: os.environ[ENV_CONFIG], ENV_JUDGE: "{not json", ENV_PROFILE: "nope"}
    )
    monkeypatch.delenv(ENV_JUDGE, raising=False)
    handler = prepare.build(Runtime(settings=settings))
    raw = {"key": "test-suites/s.csv", "iterations": 1, "target": {"url": "http://x/ask"}}
    with pytest.raises(EventError) as caught:
        handler({"event": raw}, context())
    assert f"judge: {ENV_JUDGE} is not valid JSON" in caught.value.message
    assert f"the default profile ({ENV_PROFILE}): 'nope' is not a profile" in caught.value.message
