"""The estimate of a run event with ``redteam``, before anything is written or called.

The attack writing is counted by running it: :func:`~evalrunner.redteam.plan.build_attacks`
(the code Prepare and ``evalrunner redteam`` run) against a dry judge that calls nothing and
answers every request for attacks with as many stand-in attacks as were asked, so the calls
and prompt tokens counted are those a run's Prepare sends with an empty judge cache (the
most: a judge that writes fewer attacks is asked fewer translations). The stand-in attacks
then become the suite whose grading the ordinary estimate counts
(:func:`~evalrunner.estimate.compute.estimate_run`), as a run grades the real ones.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from evalrunner.estimate.dry_judge import REPLY_SENTENCE, DryJudge, dry_reply
from evalrunner.redteam.generate import GeneratedAttack, GeneratedAttacks, InferredPurpose

if TYPE_CHECKING:
    from evalrunner.estimate.model import RunEstimate
    from evalrunner.event import RunEvent
    from evalrunner.input_limits import SuiteLimits

T = TypeVar("T", bound=BaseModel)


class AttackDryJudge(DryJudge):
    """A :class:`DryJudge` that writes ``count`` stand-in attacks when asked for attacks
    (each a sentence with a document, which only an indirect injection keeps)."""

    def __init__(self, count: int, model: str = "dry-judge") -> None:
        super().__init__(model)
        self.count = count

    def reply(self, schema: type[T]) -> T:
        if schema is GeneratedAttacks:
            attacks = [
                GeneratedAttack(
                    goal=REPLY_SENTENCE, prompt=f"{REPLY_SENTENCE} {n}", context=REPLY_SENTENCE
                )
                for n in range(1, self.count + 1)
            ]
            return schema.model_validate({"attacks": [a.model_dump() for a in attacks]})
        if schema is InferredPurpose:
            return schema.model_validate({"purpose": REPLY_SENTENCE})
        return dry_reply(schema)


def estimate_redteam(event: RunEvent, source: bytes | None, limits: SuiteLimits) -> RunEstimate:
    """The estimate of ``event`` (parsed, with ``redteam``): its attack writing (``redteam``
    in the estimate) and the run that grades the attacks. ``source``: the suite at the
    event's key (its questions give the purpose when the event states none)."""
    from evalrunner.estimate.compute import estimate_run
    from evalrunner.estimate.model import RedTeamEstimate
    from evalrunner.estimate.prices import load_prices
    from evalrunner.judge.config import JudgeConfig
    from evalrunner.pipeline.prepare import expand, settle
    from evalrunner.redteam.prepare import with_purpose, write_suite
    from evalrunner.suite.readers import read_suite

    spec = event.spec.redteam
    if spec is None:
        raise ValueError("estimate_redteam: the event has no redteam field")
    model = JudgeConfig.model_validate(event.judge).model_name if event.judge else None
    dry = AttackDryJudge(spec.num_tests, model or "dry-judge")
    stored = write_suite(spec, event, source, dry, limits)
    data = json.dumps(stored.rows, ensure_ascii=False).encode("utf-8")
    suite = read_suite(data, "redteam-attacks.json", limits)  # JSON rows, as Prepare reads
    settled = settle(with_purpose(event, stored.purpose), suite)
    estimate = estimate_run(settled, suite, expand(suite, settled.iterations))
    usage = dry.usage
    prices = load_prices().judge_prices(model)
    cost = (
        usage.input_tokens / 1e6 * prices.per_million_input
        + usage.output_tokens / 1e6 * prices.per_million_output
        if prices
        else None
    )
    writing = RedTeamEstimate(
        attacks=sum(1 for r in stored.rows if r.get("redteam_plugin")),
        calls=usage.calls,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost=None if cost is None else round(cost, 4),
    )
    note = (
        f"red team: Prepare writes the attacks with {usage.calls} judge call(s) at most (none "
        "when a rerun finds them stored, or the judge cache holds them); the judge figures "
        "above grade them, as many cases as the attacks the judge writes"
    )
    return estimate.model_copy(update={"redteam": writing, "notes": [*estimate.notes, note]})
