"""A tiny conversational evaluator for tests (the real conversation metrics are judge
evaluators of their own): it scores a whole conversation once and says, in its reason, the
transcript it was given, so a test can check that ``Sample.turns`` holds every user turn
and the target's *actual* answers in order."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from evalrunner.evaluators import Evaluator, Input, MetricSpec, Sample, Scored, registry


class TranscriptCheck(Evaluator):
    """1.0 when every user turn got a non-empty answer; the reason is the transcript."""

    name = "Transcript check (test)"
    description = "test-only: every user turn of the conversation was answered"
    inputs = frozenset({Input.TURNS})
    metrics = (MetricSpec("Transcript check", "answered turns", threshold=1.0, primary=True),)
    conversational = True

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        users = [t for t in sample.turns if t.role == "user"]
        answered = [t for t in sample.turns if t.role == "assistant" and t.content.strip()]
        seen = " | ".join(f"{t.role}: {t.content}" for t in sample.turns)
        role = sample.metadata.get("role")
        reason = f"role {role}; {seen}" if role else seen
        return {"Transcript check": Scored(len(answered) / max(len(users), 1), reason)}


@contextmanager
def transcript_check() -> Iterator[type[TranscriptCheck]]:
    """The evaluator registered for the duration of a test."""
    registry.register(TranscriptCheck)
    try:
        yield TranscriptCheck
    finally:
        registry._REGISTRY.pop(TranscriptCheck.name)
        registry._LOOKUP.pop(registry._key(TranscriptCheck.name))
