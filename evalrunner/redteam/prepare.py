"""Prepare's part of a run event's ``redteam``: the attack suite, written once and reused.

The run's judge writes the attacks with :func:`~evalrunner.redteam.plan.build_attacks`, the
function ``evalrunner redteam`` uses, so the same seed and judge cache give the same attacks
either way. They are stored under ``runs/redteam/<fingerprint>.json``, the fingerprint taken
over everything that decides them (the ``redteam`` field, the target's traits, the judge, and
for an inferred purpose the suite it was inferred from): a rerun of the same event, or a
resumed run, reads them back and asks the judge nothing; any change writes new ones. The
stored key is the run's suite key, so a red-team run is compared with the previous run of
the same attacks, never with a run of the suite at ``key``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import posixpath
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner.redteam.model import GRADER
from evalrunner.redteam.spec import RedTeamSpec
from evalrunner.storage import RUNS_PREFIX

if TYPE_CHECKING:
    from evalrunner.event import RunEvent
    from evalrunner.input_limits import SuiteLimits
    from evalrunner.judge.base import Judge
    from evalrunner.storage import RunStore
    from evalrunner.suite import Suite

#: Where the attack suites of run events are kept (under the runs' prefix: Prepare writes
#: there, and nothing under it starts a run).
ATTACKS_PREFIX = f"{RUNS_PREFIX}redteam/"
#: Judge settings that change how the attacks are asked for, not what they are.
_NOT_IDENTITY = frozenset(
    {"cache", "cache_dir", "timeout_seconds", "max_retries", "max_concurrency"}
)

_log = logging.getLogger(__name__)


class StoredAttacks(BaseModel):
    """``runs/redteam/<fingerprint>.json``: a run event's attack suite and how it was made."""

    model_config = ConfigDict(extra="forbid")

    purpose: str = Field(min_length=1)
    #: The suite rows (:func:`~evalrunner.redteam.plan.suite_rows`).
    rows: list[dict[str, Any]] = Field(min_length=1)
    #: What could not be written (a plugin the judge failed on), one line each.
    notes: list[str] = Field(default_factory=list)
    #: Every judge call of the writing answered. An incomplete set (the judge failed on a
    #: plugin or a translation: an outage, a throttle) serves the run that wrote it but is
    #: written again by the next one, so a passing failure never leaves a plugin untested
    #: for every later run (the judge cache answers what did work).
    complete: bool
    #: Judge calls that wrote them, and how many the judge cache answered.
    judge_calls: int = 0
    judge_cached: int = 0


def fingerprint(spec: RedTeamSpec, event: RunEvent, source: bytes | None) -> str:
    """What decides the attacks, hashed: the ``redteam`` field, the target's traits, the
    judge (its model, not its timeouts or cache) and the suite an inferred purpose comes
    from (``source``; None: the purpose is stated)."""
    from evalrunner.redteam.plan import target_traits

    judge = {k: v for k, v in (event.judge or {}).items() if k not in _NOT_IDENTITY}
    identity = {
        "redteam": spec.model_dump(mode="json"),
        "traits": target_traits(event.target).model_dump(mode="json"),
        "judge": judge,
        "suite": None if source is None else hashlib.sha256(source).hexdigest(),
    }
    text = json.dumps(identity, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def attack_suite(
    event: RunEvent,
    store: RunStore,
    make_judge: Callable[[], Judge],
    limits: SuiteLimits,
) -> tuple[RunEvent, Suite, str]:
    """The event with the purpose its grader judges by, the attack suite, and the key it is
    stored under (the run's suite key). Reads the stored attacks when they are there;
    otherwise has the judge (``make_judge``: the run's, built only when needed) write them
    and stores them. Raises :class:`~evalrunner.judge.base.JudgeError` when the judge wrote
    no attack at all (the execution fails with it, before anything else is written)."""
    from evalrunner.suite.readers import read_suite

    spec = event.spec.redteam
    if spec is None:
        raise ValueError("attack_suite: the event has no redteam field")
    source = store.get_bytes(event.key) if spec.purpose is None else None
    key = f"{ATTACKS_PREFIX}{fingerprint(spec, event, source)}.json"
    stored = _stored(store, key)
    if stored is not None and not stored.complete:
        _log.info("red team: the stored attacks at %s are incomplete; writing them again", key)
        stored = None
    if stored is None:
        stored = write_suite(spec, event, source, make_judge(), limits)
        store.put_json(key, stored.model_dump(mode="json"), redact=False)
        _log.info(
            "red team: attacks written",
            extra={"key": key, "judge_calls": stored.judge_calls, "cached": stored.judge_cached},
        )
    else:
        _log.info("red team: attacks reused", extra={"key": key})
    for note in stored.notes:
        _log.warning("red team: %s", note)
    data = json.dumps(stored.rows, ensure_ascii=False).encode("utf-8")
    suite = read_suite(data, posixpath.basename(key), limits)
    return with_purpose(event, stored.purpose), suite, key


def _stored(store: RunStore, key: str) -> StoredAttacks | None:
    """The attacks stored at ``key``, or None (none there, or unreadable: written again)."""
    raw = store.get_bytes_or_none(key)
    if raw is None:
        return None
    try:
        return StoredAttacks.model_validate_json(raw)
    except ValidationError:
        _log.warning("red team: the stored attacks at %s are unreadable; writing them again", key)
        return None


def write_suite(
    spec: RedTeamSpec, event: RunEvent, source: bytes | None, judge: Judge, limits: SuiteLimits
) -> StoredAttacks:
    """The attacks written by ``judge`` as ``evalrunner redteam`` writes them."""
    from evalrunner.redteam.generate import infer_purpose
    from evalrunner.redteam.plan import (
        build_attacks,
        choose_plugins,
        choose_strategies,
        suite_rows,
        target_traits,
    )
    from evalrunner.suite.readers import read_suite

    before_calls, before_cached = judge.usage.calls, judge.usage.cached
    if spec.purpose is not None:
        purpose = spec.purpose
    else:
        cases = read_suite(source or b"", posixpath.basename(event.key), limits).cases
        purpose = infer_purpose(
            judge, [q for c in cases for q in [c.question, *(t.question for t in c.turns)]]
        )
    attacks = build_attacks(
        judge,
        purpose=purpose,
        plugins=choose_plugins(spec.plugins, target_traits(event.target)),
        strategies=choose_strategies(spec.strategies),
        num_tests=spec.num_tests,
        seed=spec.seed,
        language=spec.language,
    )
    return StoredAttacks(
        purpose=purpose,
        rows=suite_rows(attacks.attacks),
        notes=attacks.notes,
        complete=not attacks.failed,
        judge_calls=judge.usage.calls - before_calls,
        judge_cached=judge.usage.cached - before_cached,
    )


def with_purpose(event: RunEvent, purpose: str) -> RunEvent:
    """``event`` with the grader's ``purpose`` option (an inferred one, or the stated one
    :mod:`evalrunner.redteam.event` already put there)."""
    resolution = event.spec.resolution
    options = dict(resolution.evaluator_options)
    options[GRADER] = {**options.get(GRADER, {}), "purpose": purpose}
    spec = event.spec.model_copy()
    spec._resolution = dataclasses.replace(resolution, evaluator_options=options)
    return event.model_copy(update={"spec": spec})
