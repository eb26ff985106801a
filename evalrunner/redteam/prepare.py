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
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalrunner.redteam.model import (
    BASE,
    GRADER,
    MAX_ATTACK_CHARS,
    PURPOSE_CHARS,
    UNTESTED_LINE_CHARS,
    Attack,
)
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


#: One line of what the writing left out (bounded: it becomes a problem's text and an option
#: every step reads).
_Line = Annotated[str, Field(max_length=UNTESTED_LINE_CHARS)]


class StoredAttacks(BaseModel):
    """``runs/redteam/<fingerprint>.json``: a run event's attack suite and how it was made."""

    model_config = ConfigDict(extra="forbid")

    purpose: str = Field(min_length=1)
    #: The attacks with their case ids, as the judge wrote them (after
    #: :func:`~evalrunner.redteam.plan.fit`); the suite rows are made from them on reading
    #: (:attr:`rows`), so what becomes the run's cases is always attacks, checked.
    attacks: list[StoredAttack] = Field(min_length=1)
    #: What could not be written (a plugin the judge failed on), one line each.
    notes: list[_Line] = Field(default_factory=list, max_length=100)
    #: Every judge call of the writing answered. An incomplete set (the judge failed on a
    #: plugin or a translation: an outage, a throttle) serves the run that wrote it but is
    #: written again by the next one, so a passing failure never leaves a plugin untested
    #: for every later run (the judge cache answers what did work).
    complete: bool
    #: What the plan asked for that these attacks do not test, one line each
    #: (:attr:`~evalrunner.redteam.plan.AttackSet.untested`): each run of them says so.
    untested: list[_Line] = Field(default_factory=list, max_length=100)
    #: Judge calls that wrote them, and how many the judge cache answered.
    judge_calls: int = 0
    judge_cached: int = 0

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The attacks as suite rows (:func:`~evalrunner.redteam.plan.suite_rows`)."""
        from evalrunner.redteam.plan import suite_rows

        return suite_rows([(a.id, a.attack) for a in self.attacks])

    def problem(
        self, plugins: Sequence[str], strategies: Sequence[str], purpose: str | None
    ) -> str | None:
        """Why these are not attacks Prepare would have written for the plan of
        ``plugins`` and ``strategies`` against ``purpose`` (the event's; None: inferred) (a
        file changed in the bucket, or by another version); None: they are. Another
        purpose than the stated one (the grader judges by the stored one), a text over the
        cap or not cleaned, a plugin or strategy the event did not name, a case id twice:
        each would reach the target or the verdict unchecked, so such a file is written
        again, never run."""
        from evalrunner.redteam.plan import fit
        from evalrunner.redteam.plugins import available
        from evalrunner.sanitize import sanitize_text

        if purpose is not None and self.purpose != purpose:
            return "its purpose is not the event's redteam.purpose"
        if len(self.purpose) > PURPOSE_CHARS or sanitize_text(self.purpose)[1]:
            return f"its purpose is over {PURPOSE_CHARS:,} characters or has control characters"
        seen: set[str] = set()
        for stored in self.attacks:
            attack, where = stored.attack, f"attack {stored.id!r}"
            if stored.id in seen:
                return f"{where} is there twice"
            seen.add(stored.id)
            if attack.plugin not in plugins:
                return f"{where} is of plugin {attack.plugin!r}, not one of the event's"
            if (attack.context is not None) != available()[attack.plugin].indirect:
                return f"{where} has a document where its plugin plants none, or none where it does"
            strategy = attack.strategy.split(":", 1)[0]
            if strategy != BASE and strategy not in strategies:
                return f"{where} is of strategy {attack.strategy!r}, not one of the event's"
            limit = MAX_ATTACK_CHARS if strategy == BASE else 2 * MAX_ATTACK_CHARS
            if fit(attack, limit) is not attack:
                return f"{where} has a text over {limit:,} characters or control characters"
        return None


class StoredAttack(BaseModel):
    """One stored attack and its case id (``<plugin>-NN``, ``...~<strategy>``)."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9:~#._-]+$")
    attack: Attack


def fingerprint(spec: RedTeamSpec, event: RunEvent, source: bytes | None) -> str:
    """What decides the attacks, hashed: the plan the ``redteam`` field resolves to (the
    plugins and strategies as sets, so their order, a name twice or ``[]`` for none change
    nothing; the language only with the language strategy), the target's traits, the
    judge (its model, not its timeouts or cache) and the suite an inferred purpose comes
    from (``source``; None: the purpose is stated). Events that choose the same attacks
    share them, and with them their suite key: the baseline of one is the other's run."""
    from evalrunner.redteam.plan import choose_plugins, choose_strategies, target_traits

    traits = target_traits(event.target)
    strategies = sorted({s.id for s in choose_strategies(spec.strategies)})
    plan = {
        "purpose": spec.purpose,
        "plugins": sorted({p.id for p in choose_plugins(spec.plugins, traits)}),
        "strategies": strategies,
        "num_tests": spec.num_tests,
        "seed": spec.seed,
        "language": spec.language if "language" in strategies else None,
    }
    judge = {k: v for k, v in (event.judge or {}).items() if k not in _NOT_IDENTITY}
    identity = {
        "redteam": plan,
        "traits": traits.model_dump(mode="json"),
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
    deadline: float | None = None,
) -> tuple[RunEvent, Suite, str]:
    """The event with the purpose its grader judges by, the attack suite, and the key it is
    stored under (the run's suite key). Reads the stored attacks when they are there;
    otherwise has the judge (``make_judge``: the run's, built only when needed) write them
    and stores them. Raises :class:`~evalrunner.judge.base.JudgeError` when the judge wrote
    no attack at all (the execution fails with it, before anything else is written).
    ``deadline``: a ``time.monotonic()`` instant the writing must end by (None: none): no
    judge call or retry that could not finish before it is asked, and what is left unwritten
    is untested, as a plugin the judge failed on (the set is not stored as complete)."""
    from evalrunner.redteam.plan import choose_plugins, choose_strategies, target_traits
    from evalrunner.suite.readers import read_suite

    spec = event.spec.redteam
    if spec is None:
        raise ValueError("attack_suite: the event has no redteam field")
    source = store.get_bytes(event.key) if spec.purpose is None else None
    key = f"{ATTACKS_PREFIX}{fingerprint(spec, event, source)}.json"
    plugins = choose_plugins(spec.plugins, target_traits(event.target))
    strategies = choose_strategies(spec.strategies)
    plan = ([p.id for p in plugins], [s.id for s in strategies], spec.purpose)
    stored = _stored(store, key, *plan)
    if stored is not None and not stored.complete:
        _log.info("red team: the stored attacks at %s are incomplete; writing them again", key)
        stored = None
    if stored is None:
        stored = write_suite(spec, event, source, make_judge().with_deadline(deadline), limits)
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
    return with_purpose(event, stored.purpose, stored.untested), suite, key


def _stored(
    store: RunStore,
    key: str,
    plugins: Sequence[str],
    strategies: Sequence[str],
    purpose: str | None,
) -> StoredAttacks | None:
    """The attacks stored at ``key`` when they are the plan's (:meth:`StoredAttacks.problem`),
    else None (none there, unreadable, or not the plan's: written again, with a warning)."""
    raw = store.get_bytes_or_none(key)
    if raw is None:
        return None
    try:
        stored = StoredAttacks.model_validate_json(raw)
    except ValidationError as exc:
        why = (
            f"{exc.error_count()} problem(s), first at {'.'.join(map(str, exc.errors()[0]['loc']))}"
        )
        _log.warning(
            "red team: the stored attacks at %s are unreadable (%s); writing them again", key, why
        )
        return None
    if (problem := stored.problem(plugins, strategies, purpose)) is not None:
        _log.warning(
            "red team: the stored attacks at %s are not this event's (%s); writing them again",
            key,
            problem,
        )
        return None
    return stored


def write_suite(
    spec: RedTeamSpec, event: RunEvent, source: bytes | None, judge: Judge, limits: SuiteLimits
) -> StoredAttacks:
    """The attacks written by ``judge`` as ``evalrunner redteam`` writes them."""
    from evalrunner.redteam.generate import infer_purpose
    from evalrunner.redteam.plan import (
        build_attacks,
        choose_plugins,
        choose_strategies,
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
        attacks=[StoredAttack(id=i, attack=a) for i, a in attacks.attacks],
        notes=attacks.notes,
        complete=not attacks.failed,
        untested=attacks.untested,
        judge_calls=judge.usage.calls - before_calls,
        judge_cached=judge.usage.cached - before_cached,
    )


def with_purpose(event: RunEvent, purpose: str, untested: Sequence[str] = ()) -> RunEvent:
    """``event`` with the grader's ``purpose`` option (an inferred one, or the stated one
    :mod:`evalrunner.redteam.event` already put there) and, when the attacks leave part of
    the plan untested, its ``untested`` option (the run's problems say so)."""
    resolution = event.spec.resolution
    options = dict(resolution.evaluator_options)
    options[GRADER] = {**options.get(GRADER, {}), "purpose": purpose}
    if untested:
        options[GRADER]["untested"] = list(untested)
    spec = event.spec.model_copy()
    spec._resolution = dataclasses.replace(resolution, evaluator_options=options)
    return event.model_copy(update={"spec": spec})
