"""The one place a local run is launched: the CLI (``run``, ``demo``, ``start``) and the
Python API (:func:`evalrunner.evaluate`) both call :func:`run_local`, so a notebook run is the
CLI's run, with the same checks, judge cache and engine, and an engine is built in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner.user_cache import user_cache_dir

if TYPE_CHECKING:  # the engine imports moto: only a run pays for it, not `import evalrunner`
    from evalrunner.engine.dispatch import Handler
    from evalrunner.engine.run_types import Pipeline, Progress, RunResult
    from evalrunner.event import RunEvent
    from evalrunner.preflight import InBackground
    from evalrunner.suite.model import Suite


def judge_cache_dir() -> Path:
    """Where local runs keep judge replies, so an unchanged case costs nothing next time
    (the embedded bucket disappears with the run)."""
    return user_cache_dir("judge")


def with_judge_cache(event: dict[str, Any]) -> dict[str, Any]:
    """The event with the local judge cache filled in, unless it opted out or named one."""
    judge = event.get("judge")
    if isinstance(judge, dict) and judge.get("cache", True) and "cache_dir" not in judge:
        return {**event, "judge": {**judge, "cache_dir": str(judge_cache_dir())}}
    return event


def check_suite(path: Path, event: dict[str, Any]) -> None:
    """Check the suite here first, as Prepare will, so bad input fails before anything is
    started or written."""
    settled_suite(path, event)


def settled_suite(path: Path, event: dict[str, Any]) -> tuple[RunEvent, Suite]:
    """The event as it will run on the suite at ``path`` (see ``prepare.settle``), and the
    suite: raises, naming the fix, on bad input."""
    from evalrunner.event import parse_event
    from evalrunner.pipeline.prepare import settle
    from evalrunner.suite.readers import read_suite_file

    suite = read_suite_file(path)
    return settle(parse_event(event), suite), suite


def preflight_local(
    event: dict[str, Any], suite: Path, *, functions: Mapping[str, Handler] | None = None
) -> None:
    """The pre-flight of a local run (:mod:`evalrunner.preflight`), made here and now."""
    start_preflight([(event, suite)], functions=functions).wait()


def start_preflight(
    runs: Iterable[tuple[dict[str, Any], Path]],
    *,
    functions: Mapping[str, Handler] | None = None,
) -> InBackground:
    """The pre-flight of local runs (each ``(event, suite)``, in order), started in the
    background: the CLI starts it for every target before the engine starts, :func:`run_local`
    unless told not to, and the engine waits for it before it sends the first case, so a
    failed probe still stops the run before anything is spent or written. Which calls are
    needed is decided here, in the caller's thread (bad input raises here)."""
    from evalrunner.preflight import InBackground, probes

    calls = []
    for event, suite in runs:
        settled, cases = settled_suite(suite, event)
        hosted = set(functions or {})
        if settled.target_kind == "lambdaArn":  # only then: the engine's import (moto) is slow
            from evalrunner.engine.local import local_target_functions

            hosted |= set(local_target_functions())
        calls += probes(settled, cases, hosted=hosted)
    return InBackground(calls)


def local_event(
    suite_name: str,
    target: dict[str, Any],
    *,
    iterations: int,
    max_concurrency: int = 10,
    metrics: list[str] | None = None,
    fail_under: dict[str, float] | None = None,
    thresholds: dict[str, float] | None = None,
    baseline: str | None = None,
    judge: Any = None,
    profile: str | None = None,
    evaluator_options: Any = None,
    max_text_chars: int | None = None,
    perturbations: list[dict[str, Any]] | None = None,
    fail_on: str | None = None,
    fail_on_regression: bool = False,
    max_error_share: float | None = None,
    plugins: list[str] | None = None,
    rescored_from: str | None = None,
    judge_metrics: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The event of a local run of a suite file against one target, from the options the
    CLI's ``run`` and :func:`evalrunner.evaluate` share; options left out are left out."""
    event: dict[str, Any] = {
        "key": f"test-suites/{suite_name}",
        "iterations": iterations,
        "target": target,
        "max_concurrency": max_concurrency,
    }
    optional = {
        "profile": profile,
        "plugins": plugins,
        "judge_metrics": judge_metrics,
        "metrics": metrics,
        "fail_under": fail_under,
        "thresholds": thresholds,
        "baseline": baseline,
        "rescored_from": rescored_from,
        "judge": judge,
        "evaluator_options": evaluator_options,
        "perturbations": perturbations,
        "fail_on": fail_on,
        "fail_on_regression": fail_on_regression or None,
        "max_error_share": max_error_share,
    }
    event.update({k: v for k, v in optional.items() if v is not None})
    if max_text_chars is not None:
        event["max_text_chars"] = max_text_chars
    return event


#: The entry-point group through which ``lambdas/`` hands the local engine its handlers.
PIPELINE_GROUP = "evalrunner.local_pipeline"


def local_pipeline() -> Pipeline:
    """The handlers a local run hosts: the very ones Lambda runs, which ``lambdas/`` registers
    under the entry point :data:`PIPELINE_GROUP` (``pyproject.toml``). Looked up, not
    imported, so the core knows nothing of Lambda and depends on nothing in ``lambdas/``."""
    from importlib.metadata import distributions

    from evalrunner.errors import ConfigError

    # Every installed copy's, not entry_points()'s first by name: a stale evalrunner.egg-info
    # left in a checkout (on sys.path as the working folder) would hide the installed one's.
    found = list(
        {
            (e.name, e.value): e
            for dist in distributions()
            for e in dist.entry_points
            if e.group == PIPELINE_GROUP
        }.values()
    )
    if len(found) != 1:
        names = ", ".join(sorted(f"{e.name} = {e.value}" for e in found)) or "none"
        raise ConfigError(
            f"a local run needs exactly one pipeline registered under the entry point "
            f"group {PIPELINE_GROUP!r}; found {names}. Reinstall evalrunner "
            f"(pip install -e . in a checkout) so its entry points are current."
        )
    (entry,) = found
    pipeline: Pipeline = entry.load()
    return pipeline


def check_resumable(event: dict[str, Any], suite: Path, out_dir: Path, resume: str) -> None:
    """Refuse a ``--resume`` that cannot be honoured (no such stopped run under ``out_dir``,
    one still running, another suite or event) as bad input, before anything is called."""
    from evalrunner.engine.saved_runs import check_resume

    check_resume(out_dir, resume, with_judge_cache(event), suite.read_bytes())


def run_local(
    event: dict[str, Any],
    suite: Path,
    out_dir: Path,
    *,
    on_progress: Callable[[Progress], None] | None = None,
    stall_timeout: float | None = None,
    resume: str | None = None,
    functions: Mapping[str, Handler] | None = None,
    preflight: bool = True,
    function_timeout: float | None = None,
    probe: InBackground | None = None,
) -> RunResult:
    """Run ``event`` over ``suite`` in the embedded engine and copy its reports to ``out_dir``.

    ``functions``: extra Lambda functions the engine hosts, by name (a Python callable given
    as the target runs as ``{"lambdaArn": NAME}``, like the demo assistant). ``preflight``:
    first probe the target and the judge once (:mod:`evalrunner.preflight`), so a dead
    endpoint, a refused key or an unmappable response stops the run before anything is
    spent (:class:`~evalrunner.preflight.PreflightFailed`). ``function_timeout``: seconds a
    pipeline function may run before the run stops (default: no limit locally; a deployed
    one has Lambda's 900 s). ``probe``: a pre-flight already started (:func:`start_preflight`,
    the CLI's, for all its targets): waited for instead of starting one."""
    from evalrunner.engine.local import LocalEngine

    # first: a bad EVALRUNNER_ENGINE_FAST is bad input, refused before any probe is spent
    engine = LocalEngine(
        pipeline=local_pipeline(),
        stall_timeout=stall_timeout,
        extra_functions=functions,
        function_timeout=function_timeout,
    )
    event = with_judge_cache(event)
    check_suite(suite, event)
    if resume:
        check_resumable(event, suite, out_dir, resume)
    elif preflight and probe is None:  # a resumed run's target answered before: not probed
        probe = start_preflight([(event, suite)], functions=functions)
    try:
        return engine.run(
            event,
            suite=suite,
            out_dir=out_dir,
            on_progress=on_progress,
            resume=resume,
            before_start=probe.wait if probe else None,
        )
    except Exception:
        # The probe's failure is what the user hears, as when the probe ran first: an error
        # of the engine's start-up that raced it comes second.
        if probe is not None:
            probe.wait()
        raise


__all__ = [
    "check_resumable",
    "check_suite",
    "judge_cache_dir",
    "local_event",
    "local_pipeline",
    "preflight_local",
    "run_local",
    "settled_suite",
    "start_preflight",
    "with_judge_cache",
]
