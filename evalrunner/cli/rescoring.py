"""``evalrunner rescore RUN``: a finished run's stored answers scored again with other
metrics, thresholds or judge, without calling its target (see :mod:`evalrunner.stored_answers`).
The run goes through the ordinary local pipeline with the logged target, so its reports,
verdict and exit codes are those of ``evalrunner run``."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from evalrunner.cli.common import (
    DEFAULT_OUT,
    EXIT_INPUT,
    FailOnOption,
    FailUnderOption,
    JudgeOption,
    JudgeTimeoutOption,
    ProfileOption,
    ThresholdOption,
    _fail,
    _json_arg,
    _pairs,
    check_out_dir,
    err,
    judge_arg,
)
from evalrunner.errors import EvalRunnerError


def rescore(
    run: Annotated[
        str,
        typer.Argument(
            help="The finished run: its run id (looked up under --out), its report.json / "
            "summary.json, or its report folder test-reports/<target> (the newest run there)."
        ),
    ],
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
    profile: ProfileOption = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(help="Module (name or .py file) of your own metrics (repeatable)."),
    ] = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Reports folder holding the run; the new reports go there. Default: the "
            "folder that holds a run given by its path (a project cell's "
            "<output>/<target>/<suite>), else evalrunner-out.",
        ),
    ] = None,
    fail_under: FailUnderOption = None,
    threshold: ThresholdOption = None,
    fail_on: FailOnOption = None,
    judge: JudgeOption = None,
    judge_timeout: JudgeTimeoutOption = None,
    evaluator_options: Annotated[
        str | None,
        typer.Option(help="The event's evaluator_options as JSON or a file."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Score a finished run's stored answers again (other metrics, thresholds or judge)
    without calling its target; the new reports are compared with the original run."""
    from evalrunner.api.inputs import suite_file
    from evalrunner.cli.run_console import report
    from evalrunner.cli.running import _execute_local, _notes
    from evalrunner.launch import check_suite, local_event
    from evalrunner.stored_answers import stored_run

    try:
        if out_dir is not None:
            check_out_dir(out_dir)
        stored = stored_run(run, out_dir or DEFAULT_OUT)
        out_dir = out_dir or stored.home  # beside the original: its baseline is found there
        check_out_dir(out_dir)
        with tempfile.TemporaryDirectory(prefix="evalrunner-rescore-") as folder:
            suite = suite_file(stored.rows, Path(folder), f"rescore-{stored.run_id}")
            event = local_event(
                suite.name,
                {"logged": stored.target},
                iterations=1,
                metrics=metric or None,
                profile=profile,
                plugins=plugin or None,
                fail_under=_pairs(fail_under, "--fail-under") if fail_under else None,
                thresholds=_pairs(threshold, "--threshold") if threshold else None,
                baseline=stored.run_id,
                rescored_from=stored.run_id,
                judge=judge_arg(judge, judge_timeout),
                evaluator_options=(
                    _json_arg(evaluator_options, "--evaluator-options")
                    if evaluator_options
                    else None
                ),
                fail_on=fail_on.value if fail_on else None,
            )
            check_suite(suite, event)
            if not (quiet or as_json):
                err.print(
                    f"Rescoring run {escape(stored.run_id)} ({len(stored.rows)} stored "
                    f"answer(s) of {escape(stored.target)}): the target is not called"
                )
            result = _execute_local(event, suite, out_dir, quiet or as_json, preflight=False)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    code = report(result, as_json=as_json)
    notices = [*result.notices, *stored.notes]
    if stored.unanswered:
        shown = ", ".join(stored.unanswered[:10])
        more = f" and {len(stored.unanswered) - 10} more" if len(stored.unanswered) > 10 else ""
        notices.append(
            f"not rescored: {len(stored.unanswered)} case(s) the target never answered in run "
            f"{stored.run_id}: {shown}{more}"
        )
    _notes(notices)
    raise typer.Exit(code)
