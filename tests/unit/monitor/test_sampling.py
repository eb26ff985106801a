"""Issue 34 item 2: a seeded sample depends on the seed and the ids only: not on the order the
records come in, nor on the batch they arrive in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evalrunner.monitor.model import Interaction, MonitorError
from evalrunner.monitor.sampling import Sample, choose, parse_sample

T0 = datetime(2026, 1, 31, tzinfo=UTC)


def items(n: int) -> list[Interaction]:
    return [
        Interaction(
            id=f"req-{i}",
            id_kind="record",
            question="q",
            answer="a",
            timestamp=T0 + timedelta(seconds=i),
            origin="log",
            source="jsonl",
        )
        for i in range(n)
    ]


def ids(chosen: list[Interaction]) -> list[str]:
    return [i.id for i in chosen]


def test_same_seed_same_sample_whatever_the_order() -> None:
    batch = items(1000)
    share = choose(batch, Sample(share=0.05), seed=7)
    assert ids(choose(list(reversed(batch)), Sample(share=0.05), seed=7)) == ids(share)
    count = choose(batch, Sample(count=30), seed=7)
    assert ids(choose(batch[::-1], Sample(count=30), seed=7)) == ids(count)
    assert len(count) == 30
    assert 25 <= len(share) <= 80  # 5% of 1000, each in with probability 0.05
    assert ids(choose(batch, Sample(share=0.05), seed=8)) != ids(share)


def test_a_share_decides_each_interaction_alone() -> None:
    batch = items(400)
    whole = set(ids(choose(batch, Sample(share=0.1), seed=1)))
    halves = ids(choose(batch[:200], Sample(share=0.1), seed=1)) + ids(
        choose(batch[200:], Sample(share=0.1), seed=1)
    )
    assert set(halves) == whole  # two runs of half the records pick what one run would


def test_no_sample_takes_all_in_time_order() -> None:
    batch = items(5)
    assert ids(choose(batch[::-1], None, seed=0)) == ids(batch)


@pytest.mark.parametrize(
    ("text", "sample"),
    [("200", Sample(count=200)), ("0.05", Sample(share=0.05)), ("5%", Sample(share=0.05))],
)
def test_parse_sample(text: str, sample: Sample) -> None:
    assert parse_sample(text) == sample


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "0%", "lots"])
def test_parse_sample_refuses(text: str) -> None:
    with pytest.raises(MonitorError, match="--sample"):
        parse_sample(text)
