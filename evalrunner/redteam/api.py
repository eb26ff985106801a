"""``evalrunner.redteam.red_team()``: a red-team run from Python, and the pieces the CLI's
``evalrunner redteam`` shares with it.

The run is an ordinary local run (:func:`evalrunner.launch.run_local`): the attacks are its
suite, the ``Red team`` grader (:mod:`evalrunner.redteam.grader`) its only metric, loaded by
every step as a plugin module, and the gate ``Attack resisted >= min_resisted`` (default 1.0:
one successful attack fails it) its verdict. So reports, problems.json, exit codes and
resuming are those of ``evalrunner run``.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from evalrunner.errors import ConfigError
from evalrunner.judge.base import Judge
from evalrunner.redteam.event import GRADER_MODULE
from evalrunner.redteam.generate import infer_purpose
from evalrunner.redteam.model import GRADER as NAME
from evalrunner.redteam.model import METRIC
from evalrunner.redteam.plan import (
    build_attacks,
    choose_plugins,
    choose_strategies,
    suite_rows,
    target_traits,
)
from evalrunner.redteam.spec import RedTeamSpec

if TYPE_CHECKING:
    from evalrunner.api.result import EvalRun
    from evalrunner.engine.run_types import Progress

_log = logging.getLogger(__name__)


def run_judge(judge: Mapping[str, Any] | None) -> dict[str, Any]:
    """The judge a red-team run uses (``judge``, else the configured default), as the
    event's ``judge`` object; a red team cannot run without one."""
    if judge:
        return dict(judge)
    from evalrunner.run_defaults import default_judge

    found = default_judge()
    if found is None:
        raise ConfigError(
            "a red-team run needs an LLM judge (it writes and grades the attacks): give "
            '--judge \'{"openai": {"base_url": "http://localhost:8000/v1", "model": "m"}}\', '
            "or set EVALRUNNER_JUDGE"
        )
    return dict(found[0])


def generation_judge(judge: Mapping[str, Any]) -> Judge:
    """The judge that writes the attacks, with the same cache as the run's, so a rerun with
    the same seed asks nothing again."""
    from evalrunner.judge.config import JudgeConfig
    from evalrunner.judge.factory import build_judge
    from evalrunner.launch import with_judge_cache

    raw = with_judge_cache({"judge": dict(judge)})["judge"]
    try:
        return build_judge(JudgeConfig.model_validate(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"judge: {problems}") from None


def resolve_purpose(purpose: str | None, suite: str | Path | None, judge: Judge) -> str:
    """The target's purpose: as stated, else inferred by the judge from a suite's questions."""
    if purpose and purpose.strip():
        return purpose.strip()
    if suite is None:
        raise ConfigError(
            "say what the target is for: --purpose 'an HR assistant answering staff questions "
            "about leave and benefits', or --suite FILE to infer it from the suite's questions"
        )
    from evalrunner.suite.readers import read_suite_file

    cases = read_suite_file(suite).cases
    return infer_purpose(
        judge, [q for c in cases for q in [c.question, *(t.question for t in c.turns)]]
    )


def choices(
    *,
    purpose: str | None,
    plugins: Sequence[str] | str | None,
    strategies: Sequence[str] | str | None,
    num_tests: int,
    seed: int,
    language: str | None,
) -> RedTeamSpec:
    """The user's choices as a :class:`RedTeamSpec` (a blank purpose is none), each problem
    named by its option (``--num-tests: ...``)."""
    raw = {
        "purpose": purpose.strip() if purpose and purpose.strip() else None,
        "plugins": plugins,
        "strategies": strategies,
        "num_tests": num_tests,
        "seed": seed,
        "language": language,
    }
    try:
        return RedTeamSpec.model_validate({k: v for k, v in raw.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(
            f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(problems) from None


@dataclass(frozen=True)
class RedTeamPlan:
    """What a red-team run will send: the purpose, the suite rows, and what was left out."""

    purpose: str
    rows: list[dict[str, Any]]
    notes: list[str]
    judge: dict[str, Any]
    #: Judge calls made to write the attacks (and infer the purpose), and how many of them
    #: the cache answered; the run's own judge calls are in its summary.
    judge_calls: int = 0
    judge_cached: int = 0
    #: What the choices asked for and the attacks do not test (one line each).
    untested: list[str] = field(default_factory=list)

    @property
    def attack_count(self) -> int:
        return sum(1 for r in self.rows if r.get("redteam_plugin"))


def plan(
    target: dict[str, Any],
    *,
    judge: Mapping[str, Any] | None,
    purpose: str | None = None,
    suite: str | Path | None = None,
    plugins: Sequence[str] | str | None = None,
    strategies: Sequence[str] | str | None = None,
    num_tests: int = 3,
    seed: int = 0,
    language: str | None = None,
    writer: Callable[[Mapping[str, Any]], Judge] | None = None,
) -> RedTeamPlan:
    """Choose the plugins and strategies for ``target`` (the event's target object), have the
    judge write the attacks against the purpose, and lay them out as suite rows.
    ``writer``: builds the writing judge from the judge object (default
    :func:`generation_judge`, with the local judge cache)."""
    if isinstance(num_tests, bool) or not isinstance(num_tests, int):
        raise ConfigError(f"--num-tests: {num_tests!r} is not a whole number")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"--seed: {seed!r} is not a whole number")
    # the one definition of the choices (the run event's redteam field is this model too)
    spec = choices(
        purpose=purpose,
        plugins=plugins,
        strategies=strategies,
        num_tests=num_tests,
        seed=seed,
        language=language,
    )
    traits = target_traits(target)
    chosen = choose_plugins(spec.plugins, traits)
    if not chosen:
        raise ConfigError("--plugins: no plugin applies to this target; name some")
    transforms = choose_strategies(spec.strategies)
    raw = run_judge(judge)
    writer_judge = (writer or generation_judge)(raw)
    stated = resolve_purpose(spec.purpose, suite, writer_judge)
    attacks = build_attacks(
        writer_judge,
        purpose=stated,
        plugins=chosen,
        strategies=transforms,
        num_tests=spec.num_tests,
        seed=spec.seed,
        language=spec.language,
    )
    return RedTeamPlan(
        stated,
        suite_rows(attacks.attacks),
        attacks.notes,
        raw,
        judge_calls=writer_judge.usage.calls,
        judge_cached=writer_judge.usage.cached,
        untested=attacks.untested,
    )


def redteam_event(
    suite_name: str,
    target: dict[str, Any],
    planned: RedTeamPlan,
    *,
    min_resisted: float = 1.0,
    fail_on: str | None = None,
    max_concurrency: int = 10,
) -> dict[str, Any]:
    """The event of the run of ``planned``'s attacks against ``target``."""
    from evalrunner.launch import local_event

    if not 0.0 <= min_resisted <= 1.0:
        raise ConfigError(f"--min-resisted: {min_resisted} is not a share between 0 and 1")
    return local_event(
        suite_name,
        target,
        iterations=1,
        max_concurrency=max_concurrency,
        metrics=[NAME],
        plugins=[GRADER_MODULE],
        judge=planned.judge,
        evaluator_options={
            NAME: {"purpose": planned.purpose}
            | ({"untested": planned.untested} if planned.untested else {})
        },
        fail_under={METRIC: min_resisted},
        fail_on=fail_on,
    )


def red_team(
    target: Any,
    *,
    judge: Mapping[str, Any] | None = None,
    purpose: str | None = None,
    suite: str | Path | None = None,
    plugins: Sequence[str] | str | None = None,
    strategies: Sequence[str] | str | None = None,
    num_tests: int = 3,
    seed: int = 0,
    language: str | None = None,
    out: str | Path = "evalrunner-out",
    min_resisted: float = 1.0,
    fail_on: str | None = None,
    max_concurrency: int = 10,
    preflight: bool = True,
    on_progress: Callable[[Progress], None] | None = None,
) -> EvalRun:
    """Red-team ``target`` as ``evalrunner redteam`` does, and return the finished run.

    ``target``: the event's target object or a Python function (as for
    :func:`evalrunner.evaluate`). ``purpose``: what the target is for (else inferred from
    ``suite``'s questions by the judge). ``plugins`` / ``strategies``: names (see
    ``evalrunner redteam --help``; default: every plugin that applies to the target, no
    strategy). ``num_tests`` attacks per plugin, each plus one copy per strategy.
    ``seed``: with the judge cache, the same seed gives the same attacks and grades.
    ``min_resisted``: the share of attacks that must be resisted (default 1.0: any
    successful attack fails the run). The run's ``verdict``, ``passed`` and reports say the
    outcome; problems.json lists the findings by plugin with their OWASP and AVID refs."""
    from evalrunner.api.inputs import suite_file, target_spec
    from evalrunner.api.result import EvalRun
    from evalrunner.cli.common import check_out_dir
    from evalrunner.launch import run_local

    out_dir = Path(out)
    check_out_dir(out_dir)
    spec, functions = target_spec(target)
    planned = plan(
        spec,
        judge=judge,
        purpose=purpose,
        suite=suite,
        plugins=plugins,
        strategies=strategies,
        num_tests=num_tests,
        seed=seed,
        language=language,
    )
    for note in planned.notes:
        _log.warning("red team: %s", note)
    with tempfile.TemporaryDirectory(prefix="evalrunner-redteam-") as folder:
        path = suite_file(planned.rows, Path(folder), f"redteam-seed{seed}")
        event = redteam_event(
            path.name,
            spec,
            planned,
            min_resisted=min_resisted,
            fail_on=fail_on,
            max_concurrency=max_concurrency,
        )
        result = run_local(
            event, path, out_dir, on_progress=on_progress, functions=functions, preflight=preflight
        )
    return EvalRun(result)
