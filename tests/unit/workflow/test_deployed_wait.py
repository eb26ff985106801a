"""How often the deployed workflow looks at a run step's run: the event's wait_seconds at
first, sparser as the run goes on, so the workflow execution's history (Step Functions caps
it at 25,000 events; one look is about nine) holds a run of days, not hours."""

from __future__ import annotations

import pytest

from evalrunner.workflow.deployed import MAX_WAIT_SECONDS, next_wait

HISTORY_LIMIT = 25_000
EVENTS_PER_LOOK = 9  # Wait entered/exited, Task entered/scheduled/started/succeeded/exited, Choice


def looks(wait_seconds: int, run_seconds: float) -> int:
    """The looks the state machine makes at one run of ``run_seconds`` (each look itself
    takes a second: a Lambda invocation and the state transitions)."""
    t, wait, count = 0.0, wait_seconds, 0
    while t < run_seconds:
        t += wait + 1
        count += 1
        wait = next_wait(wait, t)
    return count


@pytest.mark.parametrize("wait_seconds", [0, 1, 30])
def test_three_runs_of_three_days_stay_within_the_execution_history(wait_seconds: int) -> None:
    total = 3 * looks(wait_seconds, 3 * 24 * 3600)
    assert total * EVENTS_PER_LOOK + 500 < HISTORY_LIMIT, total


def test_a_short_run_is_looked_at_every_wait_seconds() -> None:
    assert next_wait(30, 0) == 30
    assert next_wait(30, 299) == 30
    assert next_wait(1, 5) == 1
    assert looks(30, 310) == 10


def test_a_long_run_is_looked_at_at_most_every_ten_minutes_unless_asked_for_longer() -> None:
    assert next_wait(30, 10**6) == MAX_WAIT_SECONDS == 600
    assert next_wait(900, 10**6) == 900
    assert next_wait(120, 1000) == 120  # never shorter than the last wait
