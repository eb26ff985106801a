"""``evalrunner.evaluate()`` and ``evalrunner.start_aws()``: a run from Python.

``evaluate`` is the CLI's ``evalrunner run`` as a function: the same event (built by
:func:`evalrunner.launch.local_event`), the same checks and the same embedded engine
(:func:`evalrunner.launch.run_local`), so its numbers are the CLI's numbers. What it adds is
that the suite and the target may be Python objects (see :mod:`evalrunner.api.inputs`).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner.api.inputs import suite_file, target_spec
from evalrunner.api.result import EvalRun
from evalrunner.errors import EventError
from evalrunner.evaluators.plugins import MetricChoice, selection
from evalrunner.launch import local_event, run_local
from evalrunner.reports.verdict import FailOn

if TYPE_CHECKING:
    from evalrunner.engine.run_types import Progress

#: Where reports go when no ``out`` is given: the CLI's default folder.
DEFAULT_OUT = Path("evalrunner-out")


def evaluate(
    suite: Any,
    target: Any,
    *,
    metrics: Sequence[MetricChoice] | None = None,
    profile: str | None = None,
    plugins: Sequence[str] | None = None,
    iterations: int = 1,
    judge: Mapping[str, Any] | str | None = None,
    out: str | Path = DEFAULT_OUT,
    thresholds: Mapping[str, float] | None = None,
    fail_under: Mapping[str, float] | None = None,
    baseline: str | None = None,
    fail_on: FailOn | str | None = None,
    fail_on_regression: bool = False,
    max_error_share: float | None = None,
    evaluator_options: Mapping[str, Any] | None = None,
    max_concurrency: int = 10,
    max_text_chars: int | None = None,
    suite_name: str = "python-suite",
    on_progress: Callable[[Progress], None] | None = None,
    preflight: bool = True,
    target_options: Mapping[str, Any] | None = None,
    function_timeout: float | None = None,
) -> EvalRun:
    """Run ``suite`` against ``target`` in the embedded engine, exactly as ``evalrunner run``
    does, and return the finished run.

    ``suite``: an .xlsx / .csv / .json file, a list of dicts (one per case: ``question``,
    ``expected_answer``, ... as in a suite file) or a pandas DataFrame with those columns.
    ``target``: the event's target object (``{"url": ...}``, ``{"lambdaArn": ...}``, ...) or
    a function ``fn(question) -> answer | (answer, contexts) | dict`` run in-process.
    ``judge``: the LLM judge as in ``--judge`` (``{"openai": {...}}`` / ``{"bedrock": {...}}``);
    without one, judge metrics are skipped with a reason. ``profile``: a named set of metrics
    and thresholds, as ``--profile`` (``"seed-003"``: the seed runner's nine metrics at
    DeepEval's default threshold 0.5); ``metrics`` and ``thresholds`` add to it. ``out``: the
    reports folder (earlier runs there are the baseline, as with the CLI). ``metrics``: names
    (``"Rouge Metric"``), evaluator objects with their settings (``Faithfulness(threshold=0.8)``;
    ``thresholds`` given here win over theirs) and ``@evalrunner.metric`` functions or your own
    Evaluator subclasses, mixed; your metrics' modules are imported by every step of the run.
    A named judge metric is an object too: ``GEval(name="Politeness", criteria=...,
    evaluation_params=["input", "actual_output"], threshold=0.7)``, ``BYOP(name=...,
    prompt=...)``; each is a metric of its own (column, result row, gate).
    ``plugins``: modules of your own metrics by name or .py path, as ``--plugin``: their
    metrics run besides the defaults, or when named in ``metrics``.
    ``suite_name``: the file name a suite given as Python rows is reported under
    (``<suite_name>.json``). ``fail_on``,
    ``fail_on_regression``, ``max_error_share``: what fails the run, as ``--fail-on``,
    ``--fail-on-regression`` and ``--max-error-share`` (default: a case below a primary
    metric's threshold fails it; more than 10% errors make it not measured); the returned
    run's ``verdict`` and ``passed`` say the outcome. ``target_options``: more fields
    of the event's target object, for a function target above all: ``{"timeout_seconds": 10,
    "max_response_bytes": 2_000_000}`` (a function that does not answer in time, or answers
    more, is that case's target error; defaults 60 s and 1 MiB, as for an HTTP target).
    ``function_timeout``: seconds one pipeline function (a task of cases) may run before the
    run stops, as ``--function-timeout`` (default: no limit locally; deployed, Lambda's 900).

    Bad input raises an :class:`~evalrunner.errors.EvalRunnerError` subclass whose message
    names the row, column or field and the fix, before anything runs. ``preflight``: first
    call the target (and the judge, when a metric uses it) once; a dead endpoint, a refused
    key or an answer that cannot be read raises
    :class:`~evalrunner.preflight.PreflightFailed` before any case runs."""
    from evalrunner.cli.common import check_out_dir

    out_dir = Path(out)
    check_out_dir(out_dir)
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
        raise EventError(f"iterations: {iterations!r} is not a positive integer")
    if function_timeout is not None and not (
        isinstance(function_timeout, int | float) and 1 <= function_timeout < float("inf")
    ):
        raise EventError(
            f"function_timeout: {function_timeout!r} is not a number of seconds of at least 1; "
            "leave it out for no limit"
        )
    chosen = selection(list(metrics or []))
    spec, functions = target_spec(target)
    if target_options:
        spec = {**spec, **dict(target_options)}
    with tempfile.TemporaryDirectory(prefix="evalrunner-suite-") as folder:
        path = suite_file(suite, Path(folder), suite_name)
        event = local_event(
            path.name,
            spec,
            iterations=iterations,
            max_concurrency=max_concurrency,
            metrics=chosen.metrics or None,
            profile=profile,
            plugins=list(dict.fromkeys([*(plugins or []), *chosen.plugins])) or None,
            judge_metrics=chosen.judge_metrics or None,
            fail_under=dict(fail_under) if fail_under else None,
            thresholds={**chosen.thresholds, **(thresholds or {})} or None,
            baseline=baseline,
            judge=_judge(judge),
            evaluator_options={**chosen.options, **(evaluator_options or {})} or None,
            max_text_chars=max_text_chars,
            fail_on=_fail_on(fail_on),
            fail_on_regression=fail_on_regression,
            max_error_share=max_error_share,
        )
        result = run_local(
            event,
            path,
            out_dir,
            on_progress=on_progress,
            functions=functions,
            preflight=preflight,
            function_timeout=function_timeout,
        )
    return EvalRun(result)


def start_aws(
    event: Mapping[str, Any] | str | Path,
    *,
    bucket: str,
    state_machine_arn: str,
    suite: str | Path | None = None,
    out: str | Path = DEFAULT_OUT,
    session: Any = None,
    poll_seconds: float = 2.0,
) -> EvalRun:
    """Start ``event`` on the deployed state machine, wait for it, and download its reports
    into ``out``: ``evalrunner start --aws`` as a function. ``suite``: a local file uploaded
    to the event's key first. ``session``: a boto3 Session (default: the environment's)."""
    from evalrunner.cli.common import check_out_dir
    from evalrunner.engine.remote import start_remote
    from evalrunner.event import parse_event
    from evalrunner.launch import check_suite

    spec = _event(event)
    parse_event(spec)
    out_dir = Path(out)
    check_out_dir(out_dir)
    suite_path = Path(suite) if suite is not None else None
    if suite_path is not None:
        check_suite(suite_path, spec)
    result = start_remote(
        spec,
        bucket=bucket,
        state_machine_arn=state_machine_arn,
        out_dir=out_dir,
        suite=suite_path,
        session=session,
        poll_seconds=poll_seconds,
    )
    return EvalRun(result)


def _fail_on(fail_on: FailOn | str | None) -> str | None:
    if fail_on is None:
        return None
    try:
        return FailOn(fail_on).value
    except ValueError:
        valid = ", ".join(f.value for f in FailOn)
        raise EventError(f"fail_on: {fail_on!r} is not one of {valid}") from None


def _judge(judge: Mapping[str, Any] | str | None) -> Any:
    if judge is None or isinstance(judge, Mapping):
        return dict(judge) if judge else None
    from evalrunner.cli.common import _json_arg

    return _json_arg(judge, "judge")


def _event(event: Mapping[str, Any] | str | Path) -> dict[str, Any]:
    if isinstance(event, Mapping):
        return dict(event)
    path = Path(event)
    if not path.is_file():
        raise EventError(f"event: {event} is not a file; give the event as a dict or a path")
    try:
        parsed = json.loads(path.read_text("utf-8"))
    except json.JSONDecodeError as exc:
        raise EventError(f"event: {path} is not valid JSON ({exc})") from None
    if not isinstance(parsed, dict):
        raise EventError(f"event: {path} holds a {type(parsed).__name__}, not an object")
    return parsed


__all__ = ["DEFAULT_OUT", "evaluate", "start_aws"]
