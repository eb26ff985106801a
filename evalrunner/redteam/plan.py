"""From the user's choices to the attack suite: plugins and strategies resolved against the
target, attacks written by the judge and transformed, and the suite rows they become.

Determinism: the plugins' attacks come from judge prompts that name the seed (cached), and
every random choice (examples shown, languages, multi-turn phrasings) comes from a
``random.Random`` seeded with the seed and the attack's place, never from the clock or the
order of threads; case ids are positions. The same seed with the same judge cache is the
same suite, case for case.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from evalrunner.errors import ConfigError
from evalrunner.judge.base import Judge, JudgeError
from evalrunner.redteam.generate import translate, write_attacks
from evalrunner.redteam.model import (
    BASE,
    CATEGORY,
    GOAL_KEY,
    MAX_ATTACK_CHARS,
    MAX_TESTS,
    NOTES_KEY,
    PLUGIN_KEY,
    PLUGIN_PREFIX,
    STRATEGY_KEY,
    STRATEGY_PREFIX,
    UNTESTED_LINE_CHARS,
    Attack,
    TargetTraits,
)
from evalrunner.redteam.plugins import Plugin, available
from evalrunner.redteam.strategies import Strategy, StrategyTools
from evalrunner.redteam.strategies import available as available_strategies
from evalrunner.sanitize import cap_text, sanitize_text

#: Judge calls in flight while the attacks are written and transformed.
WORKERS = 8
#: Agent kinds: their tool calls are reported, so excessive agency is attacked by default.
AGENT_KINDS = frozenset({"agentId"})


def target_traits(spec: dict[str, Any]) -> TargetTraits:
    """What ``spec`` (the event's target object) can be attacked through."""
    from evalrunner.targets.registry import detect_kind, target_class

    kind = detect_kind(spec)
    return TargetTraits(
        kind=kind,
        takes_contexts=target_class(spec).sends_contexts(spec) is not None,
        has_tools=kind in AGENT_KINDS,
    )


def _names(value: Sequence[str] | str | None) -> list[str]:
    """``["a", "b"]`` from a list, or from ``"a,b"`` as one option value."""
    if value is None:
        return []
    items = [value] if isinstance(value, str) else list(value)
    return [n.strip() for item in items for n in str(item).split(",") if n.strip()]


def choose_plugins(names: Sequence[str] | str | None, target: TargetTraits) -> list[type[Plugin]]:
    """The plugins named (all that apply to ``target`` when none are), each checked."""
    catalog = available()
    chosen = _names(names)
    if not chosen:
        return [p for p in catalog.values() if p.by_default(target)]
    unknown = [n for n in chosen if n not in catalog]
    if unknown:
        raise ConfigError(
            f"--plugins: unknown plugin(s) {', '.join(map(repr, unknown))}; choose from "
            f"{', '.join(catalog)}"
        )
    plugins = [catalog[n] for n in dict.fromkeys(chosen)]
    for plugin in plugins:
        if (why := plugin.unavailable(target)) is not None:
            raise ConfigError(f"--plugins {plugin.id}: {why}")
    return plugins


def choose_strategies(names: Sequence[str] | str | None) -> list[type[Strategy]]:
    """The strategies named (none when none are: the attacks as written)."""
    catalog = available_strategies()
    chosen = _names(names)
    unknown = [n for n in chosen if n not in catalog]
    if unknown:
        raise ConfigError(
            f"--strategies: unknown strategy(ies) {', '.join(map(repr, unknown))}; choose from "
            f"{', '.join(catalog)}"
        )
    return [catalog[n] for n in dict.fromkeys(chosen)]


def fit(attack: Attack, limit: int = MAX_ATTACK_CHARS) -> Attack:
    """``attack`` as it may be sent: each text the judge wrote (message, document, goal,
    earlier turns) cleaned of lone surrogates and control characters and cut to ``limit``
    characters, each change a line of the attack's ``notes`` (the grader's reason repeats
    them, so the report says so). An attack with nothing to change comes back as it is."""
    notes: list[str] = []

    def clean(text: str, what: str) -> str:
        text, found = sanitize_text(text)
        if found:
            notes.append(found.describe(f"the attack's {what}"))
        kept, cut = cap_text(text, limit)
        if cut:
            notes.append(
                f"the attack's {what} was {len(text):,} characters; cut to {limit:,} before it "
                "was sent (the judge wrote more than an attack needs)"
            )
        return kept

    update: dict[str, object] = {
        "prompt": clean(attack.prompt, "message"),
        "goal": clean(attack.goal, "goal"),
        "turns": [clean(t, f"turn {n}") for n, t in enumerate(attack.turns, start=1)],
    }
    if attack.context is not None:
        update["context"] = clean(attack.context, "document")
    if not notes:
        return attack
    return attack.model_copy(update={**update, "notes": [*attack.notes, *notes]})


def writing_calls(
    plugins: Sequence[type[Plugin]],
    strategies: Sequence[type[Strategy]],
    num_tests: int,
    *,
    infer_purpose: bool = False,
) -> int:
    """The most judge calls :func:`build_attacks` makes (plus one to infer the purpose):
    one per plugin, and for each strategy that asks the judge (``uses_judge``: a
    translation) one per attack, two for an indirect injection (its message and its
    document). Fewer when the judge writes fewer attacks or the cache answers: this is what
    ``evalrunner estimate`` counts and what Prepare sizes its time by."""
    per_attack = sum(1 for s in strategies if s.uses_judge)
    translated = sum(num_tests * (2 if p.indirect else 1) for p in plugins) * per_attack
    return int(infer_purpose) + len(plugins) + translated


@dataclass
class AttackSet:
    """The attacks of a run, and what could not be written (one line each)."""

    attacks: list[tuple[str, Attack]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Judge calls that failed (a plugin's attacks, a translation): the set lacks what
    #: they would have written, so it is not one to keep and reuse as the full plan.
    failed: int = 0
    #: What the plan asked for and the run will not test (a plugin or translation the
    #: judge failed on, a plugin it wrote fewer attacks for), one line each: the run's
    #: problems say so, so a gate passed over fewer attacks is not read as the whole plan.
    untested: list[str] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-")


def build_attacks(
    judge: Judge,
    *,
    purpose: str,
    plugins: Sequence[type[Plugin]],
    strategies: Sequence[type[Strategy]],
    num_tests: int,
    seed: int,
    language: str | None = None,
) -> AttackSet:
    """``num_tests`` attacks per plugin, each with one transformed copy per strategy that
    applies to it, with their case ids. A plugin (or a translation) the judge fails on is
    left out with a note; the others go on."""
    if not 1 <= num_tests <= MAX_TESTS:
        raise ConfigError(f"--num-tests: {num_tests} is not between 1 and {MAX_TESTS}")
    out = AttackSet()

    def judged_translate(text: str, to: str) -> str:
        return translate(judge, text, to)

    def write(plugin: type[Plugin]) -> list[Attack] | JudgeError:
        try:
            return [fit(a) for a in write_attacks(judge, plugin, purpose, num_tests, seed)]
        except JudgeError as exc:
            return exc

    def transform(job: tuple[str, Attack, type[Strategy]]) -> Attack | JudgeError | None:
        base_id, attack, strategy = job
        tools = StrategyTools(
            rng=random.Random(f"{seed}/{base_id}/{strategy.id}"),
            purpose=purpose,
            translate=judged_translate,
            language=language,
        )
        try:
            made = strategy.apply(attack, tools)
        except JudgeError as exc:
            return exc
        # a translation is the judge's text too; an encoding of a capped attack is longer
        # than the attack (base64: 4/3), so the cap here leaves it room
        return None if made is None else fit(made, 2 * MAX_ATTACK_CHARS)

    # The judge calls run side by side (the judge's own limiter keeps the endpoint's pace);
    # results are placed by position, so the order of replies changes nothing.
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="redteam") as pool:
        bases: list[tuple[str, Attack]] = []
        for plugin, written in zip(plugins, pool.map(write, plugins), strict=True):
            if isinstance(written, JudgeError):
                out.failed += 1
                out.untested.append(f"{plugin.id}: the judge could not write attacks ({written})")
                continue
            if len(written) < num_tests:
                out.untested.append(
                    f"{plugin.id}: the judge wrote {len(written)} usable attack(s) of {num_tests}"
                )
            bases += [(f"{plugin.id}-{n:02d}", a) for n, a in enumerate(written, start=1)]
        jobs = [(base_id, attack, s) for base_id, attack in bases for s in strategies]
        changed = dict(zip(((j[0], j[2].id) for j in jobs), pool.map(transform, jobs), strict=True))
    failures: dict[str, list[JudgeError]] = {}
    for base_id, attack in bases:
        out.attacks.append((base_id, attack))
        for strategy in strategies:
            made = changed[(base_id, strategy.id)]
            if isinstance(made, JudgeError):
                failures.setdefault(strategy.id, []).append(made)
            elif made is not None:
                out.attacks.append((f"{base_id}~{_slug(made.strategy)}", made))
    for strategy_id, errors in failures.items():  # one line a strategy, not one an attack
        out.failed += len(errors)
        out.untested.append(
            f"{strategy_id}: the judge failed on {len(errors)} of {len(bases)} attack(s) "
            f"(the first: {errors[0]})"
        )
    # each line is a problem's text and an option every step of the run reads: bounded
    out.untested = [cap_text(line, UNTESTED_LINE_CHARS)[0] for line in out.untested]
    out.notes += out.untested
    fitted = sum(1 for _, attack in out.attacks if attack.notes)
    if fitted:
        out.notes.append(
            f"{fitted} attack(s) as the judge wrote them were cut to {MAX_ATTACK_CHARS:,} "
            "characters or had control characters replaced before they were sent; each one's "
            "Attack resisted reason says what"
        )
    if not out.attacks:
        raise JudgeError(
            "the judge wrote no attack: " + ("; ".join(out.notes) or "no plugin was chosen")
        )
    return out


def suite_rows(attacks: Sequence[tuple[str, Attack]]) -> list[dict[str, Any]]:
    """The attacks as suite rows: one row per attack, or one per turn of a multi-turn attack
    (its last turn is the attack, graded; the earlier turns are only played). The plugin,
    goal and strategy travel as columns (the grader reads them from the case's metadata) and
    as categories (per-plugin results in the report; the findings)."""
    rows: list[dict[str, Any]] = []
    for case_id, attack in attacks:
        categories = [
            CATEGORY,
            f"{PLUGIN_PREFIX}{attack.plugin}",
            f"{STRATEGY_PREFIX}{attack.strategy}",
        ]
        graded: dict[str, Any] = {
            "question": attack.prompt,
            "categories": categories,
            PLUGIN_KEY: attack.plugin,
            GOAL_KEY: attack.goal,
            STRATEGY_KEY: attack.strategy,
        }
        if attack.notes:  # the grader repeats them in its reason: the report says so
            graded[NOTES_KEY] = "\n".join(attack.notes)
        if attack.context is not None:
            graded["retrieved_contexts"] = [attack.context]
        if not attack.turns:
            rows.append({"id": case_id, **graded})
            continue
        # the earlier turns are only played: no plugin category, so nothing grades them
        # (the grader knows an attack by its column, else by that category)
        played = [CATEGORY, f"{STRATEGY_PREFIX}{attack.strategy}"]
        for turn, text in enumerate(attack.turns, start=1):
            rows.append(
                {"conversation_id": case_id, "turn": turn, "question": text, "categories": played}
            )
        rows.append({"conversation_id": case_id, "turn": len(attack.turns) + 1, **graded})
    return rows


__all__ = [
    "BASE",
    "MAX_TESTS",
    "AttackSet",
    "build_attacks",
    "choose_plugins",
    "choose_strategies",
    "fit",
    "suite_rows",
    "target_traits",
    "writing_calls",
]
