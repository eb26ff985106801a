"""The watchdog tells a stuck execution from a slow one, on a clock the test moves."""

from __future__ import annotations

import threading

import pytest

from evalrunner.engine.watchdog import (
    STALL_TIMEOUT_ENV,
    Watchdog,
    stall_timeout_from_env,
)
from evalrunner.errors import ConfigError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_idle_with_nothing_in_flight_is_a_stall_only_after_the_timeout():
    clock = Clock()
    dog = Watchdog(stall_timeout=30, clock=clock)
    dog.track("evalrunner-run-case", lambda e, c: None)({}, None)
    clock.now += 29
    assert dog.check() is None
    clock.now += 2
    stall = dog.check()
    assert stall is not None and "nothing ran for 31 s" in stall.reason
    assert STALL_TIMEOUT_ENV in stall.reason


def test_a_slow_function_in_flight_is_not_a_stall_until_lambdas_limit():
    clock = Clock()
    dog = Watchdog(stall_timeout=5, function_timeout=900, clock=clock)
    entered, release = threading.Event(), threading.Event()

    def slow_target(event, context):
        entered.set()
        release.wait(10)

    thread = threading.Thread(target=dog.track("evalrunner-run-case", slow_target), args=({}, None))
    thread.start()
    try:
        assert entered.wait(10)
        clock.now += 600  # a slow target, not a stuck interpreter
        assert dog.check() is None
        clock.now += 301
        stall = dog.check()
        assert stall is not None
        assert "evalrunner-run-case has been running for 901 s" in stall.reason
    finally:
        release.set()
        thread.join()
    assert dog.finished == 1


def test_a_failing_handler_still_counts_as_activity():
    clock = Clock()
    dog = Watchdog(stall_timeout=5, clock=clock)

    def broken(event, context):
        raise RuntimeError("target blew up")

    clock.now += 100
    with pytest.raises(RuntimeError):
        dog.track("evalrunner-run-case", broken)({}, None)
    assert dog.check() is None  # the failure happened just now: the run is moving


@pytest.mark.parametrize("raw", ["0", "-3", "soon", "nan", "inf"])
def test_a_bad_stall_timeout_setting_is_refused_with_its_name(monkeypatch, raw):
    monkeypatch.setenv(STALL_TIMEOUT_ENV, raw)
    with pytest.raises(ConfigError, match=STALL_TIMEOUT_ENV):
        stall_timeout_from_env()


def test_the_stall_timeout_setting(monkeypatch):
    monkeypatch.delenv(STALL_TIMEOUT_ENV, raising=False)
    assert stall_timeout_from_env() == 120
    monkeypatch.setenv(STALL_TIMEOUT_ENV, "7.5")
    assert stall_timeout_from_env() == 7.5
