"""A test-only GPU-batched evaluator and a prepared run on moto S3, shared by the GPU task and
Score-routing tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from evalrunner.evaluators import BatchEvaluator, Input, MetricSpec, Sample, Scored, registry

#: Answers computed elsewhere: the cases are scored without calling any target.
SUITE = (
    b"id,question,expected_answer,actual_answer\n"
    b"a,Q one?,alpha beta,alpha beta\n"
    b"b,Q two?,gamma,gamma delta epsilon\n"
    b"c,Q three?,zeta eta,zeta\n"
)
METRICS = ["Length ratio (gpu test)", "Exact match"]


class LengthRatio(BatchEvaluator):
    """Stands in for a GPU model: batched over the whole run in the Score step."""

    name = "Length ratio (gpu test)"
    description = "answer length / expected length"
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    metrics = (MetricSpec("Length ratio", "ratio", threshold=0.5, primary=True),)
    batches: ClassVar[list[int]] = []

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored]]:
        LengthRatio.batches.append(len(samples))
        return [
            {"Length ratio": Scored(len(s.answer) / len(s.expected_answer), "ratio")}
            for s in samples
        ]


def register() -> None:
    registry.register(LengthRatio)
    LengthRatio.batches = []


def unregister() -> None:
    registry._REGISTRY.pop(LengthRatio.name, None)
    registry._LOOKUP.pop(registry._key(LengthRatio.name), None)
