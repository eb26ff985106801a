"""The commands that run a suite: ``run`` (a suite against one or more targets on this
machine), ``demo`` (the bundled HR assistant) and ``start`` (an event, locally or on the deployed
state machine). What a finished run prints, and its exit code, is :mod:`.run_console`."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from evalrunner.cli.ci_reports import (
    JunitOption,
    MarkdownOption,
    check_ci_paths,
    write_ci_reports,
)
from evalrunner.cli.common import (
    DEFAULT_OUT,
    EXIT_INPUT,
    EXIT_PREFLIGHT,
    EXIT_RUN,
    ConfigOption,
    FailOnOption,
    FailOnRegression,
    FailUnderOption,
    FunctionTimeoutOption,
    JudgeMetricOption,
    JudgeOption,
    JudgeTimeoutOption,
    MaxErrorShare,
    NoPreflight,
    PerturbOption,
    ProfileOption,
    SuitesOption,
    ThresholdOption,
    _fail,
    _json_arg,
    _pairs,
    _progress_bar,
    check_out_dir,
    err,
    judge_arg,
    judge_metrics_arg,
    out,
    perturbation_arg,
)
from evalrunner.cli.leaderboards import _leaderboard_from_runs
from evalrunner.cli.projects import given_options, project_file
from evalrunner.cli.run_console import report
from evalrunner.errors import EvalRunnerError, EventError, ExecutionFailed, PartialRun
from evalrunner.gc_freeze import older_objects_frozen
from evalrunner.launch import (
    check_resumable,
    check_suite,
    local_event,
    run_local,
    start_preflight,
)

if TYPE_CHECKING:  # the engine (moto) is imported by the commands that run, not at startup
    from evalrunner.engine.run_types import RunResult
    from evalrunner.preflight import InBackground

DEMO_TARGET = {"lambdaArn": "evalrunner-demo-hr"}


def _execute_local(
    event: dict[str, Any],
    suite: Path,
    out_dir: Path,
    quiet: bool,
    *,
    stall_timeout: float | None = None,
    resume: str | None = None,
    preflight: bool = True,
    function_timeout: float | None = None,
    probe: InBackground | None = None,
) -> RunResult:
    """The CLI's local run. Its process is the run's alone, so its older objects (the
    imported libraries) are set aside from the cyclic collector while it
    runs (:mod:`evalrunner.gc_freeze`); the Python API leaves a notebook's or a test
    session's collector as it found it."""
    # Imported before the block, so the engine's libraries (moto, botocore) are set aside too.
    import evalrunner.engine.local  # noqa: F401

    with older_objects_frozen():
        if quiet:
            return run_local(
                event,
                suite,
                out_dir,
                stall_timeout=stall_timeout,
                resume=resume,
                preflight=preflight,
                function_timeout=function_timeout,
                probe=probe,
            )
        bar, task = _progress_bar()
        # Drawn from the first progress the run reports, which comes after the pre-flight's
        # answer: a failed probe leaves no bar behind, as when the probe ran first.
        try:

            def update(p: Any) -> None:
                if not bar.live.is_started:
                    bar.start()
                bar.update(
                    task,
                    total=p.total or None,
                    completed=p.done,
                    errors=p.errors,
                    description=f"{p.phase}",
                )

            return run_local(
                event,
                suite,
                out_dir,
                on_progress=update,
                stall_timeout=stall_timeout,
                resume=resume,
                preflight=preflight,
                function_timeout=function_timeout,
                probe=probe,
            )
        finally:
            if bar.live.is_started:  # stopping a bar never drawn would print a blank line
                bar.stop()


def logged_plans(suite: Path, scratch: Path) -> list[tuple[str, Path]]:
    """The runs of ``evalrunner run`` without ``--target``: the suite's logged answers, the
    reports named after the suite (Prepare refuses it, naming the rows, if a case has no
    answer). An H2O test lab in which several models answered each case is one run per
    model instead, each model's answers under its name, compared on a leaderboard: each
    model's lab is written to ``scratch`` under the suite's own file name, so every run is
    of the same suite."""
    from evalrunner.suite.labs import split_lab
    from evalrunner.targets._common import sanitise_name

    models = split_lab(suite.read_bytes()) if suite.suffix.lower() == ".json" else []
    if not models:
        return [(json.dumps({"logged": sanitise_name(suite.stem, fallback="suite")}), suite)]
    plans = []
    for number, (model, lab) in enumerate(models, start=1):
        path = scratch / str(number) / suite.name
        path.parent.mkdir()
        path.write_bytes(lab)
        plans.append((json.dumps({"logged": sanitise_name(model, fallback="model")}), path))
    return plans


def run(
    suites: SuitesOption = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            help="The event's target object as JSON, or a file. Repeat it to compare several "
            "targets on the suite (a leaderboard). Optional when every case carries its "
            "answer (answer_from_system / actual_answer): the suite is scored as logged and "
            "the reports are named after it. With a project file: a target's name "
            "(repeatable), to run only those."
        ),
    ] = None,
    config: ConfigOption = None,
    iterations: Annotated[
        int | None, typer.Option(help="Times every case is run (default 1).")
    ] = None,
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
    profile: ProfileOption = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(help="Module (name or .py file) of your own metrics (repeatable)."),
    ] = None,
    judge_metric: JudgeMetricOption = None,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Folder for the reports (default evalrunner-out, or the project's)."
        ),
    ] = None,
    fail_under: FailUnderOption = None,
    threshold: ThresholdOption = None,
    baseline: Annotated[
        str | None, typer.Option(help="Run id to compare with (default: the previous run).")
    ] = None,
    fail_on: FailOnOption = None,
    fail_on_regression: FailOnRegression = False,
    max_error_share: MaxErrorShare = None,
    judge: JudgeOption = None,
    judge_timeout: JudgeTimeoutOption = None,
    evaluator_options: Annotated[
        str | None,
        typer.Option(
            help="The event's evaluator_options as JSON or a file, e.g. "
            '\'{"Groundedness": {"model": "/models/bge-small-en-v1.5"}}\'.'
        ),
    ] = None,
    max_concurrency: Annotated[
        int | None, typer.Option(help="Cases run at once (default 10).")
    ] = None,
    max_text_chars: Annotated[
        int | None,
        typer.Option(
            help="Characters of each answer / context evaluators examine (default 100000); "
            "longer texts are cut and the case marked truncated."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    stall_timeout: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            help="Seconds with nothing running before the run is declared stuck and stopped "
            "with exit 3, reports written for the cases that finished (default "
            "$EVALRUNNER_STALL_TIMEOUT, else 120).",
        ),
    ] = None,
    function_timeout: FunctionTimeoutOption = None,
    perturb: PerturbOption = None,
    resume: Annotated[
        str | None,
        typer.Option(
            help="Run id of a run that stopped part-way: killed, stopped (SIGTERM, Ctrl-C) "
            "or stalled (its error message, or the next run in that --out, names it): the "
            "cases it finished are kept and only the rest are run. Same --suite, --target, "
            "options and --out as the stopped run; with a project file, --target and --suite "
            "picking the stopped cell.",
        ),
    ] = None,
    junit_xml: JunitOption = None,
    markdown: MarkdownOption = None,
    no_preflight: NoPreflight = False,
    view: Annotated[
        bool,
        typer.Option(
            "--view",
            help="Open the viewer (evalrunner view) on --out as the run starts: cases appear "
            "as they finish; it keeps serving after the run until Ctrl-C.",
        ),
    ] = False,
) -> None:
    """Evaluate a suite against a target on this machine (the embedded engine); with no
    --suite file, every target × suite of the project file (evalrunner.toml / .yaml)."""
    from evalrunner.preflight import PreflightFailed  # pydantic: not for --help (issue 31)

    try:
        project = project_file(config, suites or [])
        # with a project file and no --judge, --judge-timeout sets the file's judge's timeout
        file_judge_timeout = judge_timeout if project and not judge else None
        given = given_options(
            iterations=iterations,
            max_concurrency=max_concurrency,
            metrics=metric or None,
            profile=profile,
            plugins=plugin or None,
            judge_metrics=judge_metrics_arg(judge_metric) or None,
            fail_under=_pairs(fail_under, "--fail-under") if fail_under else None,
            thresholds=_pairs(threshold, "--threshold") if threshold else None,
            baseline=baseline,
            judge=None if file_judge_timeout else judge_arg(judge, judge_timeout),
            evaluator_options=(
                _json_arg(evaluator_options, "--evaluator-options") if evaluator_options else None
            ),
            max_text_chars=max_text_chars,
            perturbations=[perturbation_arg(p) for p in perturb] if perturb else None,
            fail_on=fail_on.value if fail_on else None,
            fail_on_regression=fail_on_regression or None,
            max_error_share=max_error_share,
        )
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    if project is not None:
        from evalrunner.cli.projects import run_project
        from evalrunner.project.cells import Overrides

        run_project(
            project,
            Overrides(
                event=given,
                targets=target or [],
                suites=[str(s) for s in suites or []],
                output=out_dir,
                judge_timeout=file_judge_timeout,
                resume=resume,
            ),
            as_json=as_json,
            quiet=quiet,
            stall_timeout=stall_timeout,
            function_timeout=function_timeout,
            junit_xml=junit_xml,
            markdown=markdown,
            no_preflight=no_preflight,
            execute=_execute_local,
        )
    (suite,) = suites or []  # project_file: no project file means one suite file was given
    out_dir = out_dir or DEFAULT_OUT
    stack = ExitStack()
    viewer = None
    results: list[RunResult] = []
    stopped = False  # a stopped run is reported, but no leaderboard is made of a partial set
    try:
        if not suite.is_file():
            raise EventError(f"--suite: {suite} does not exist or is not a file")
        if resume and target and len(target) > 1:
            raise EventError("--resume continues one run: give exactly one --target with it")
        check_out_dir(out_dir)
        check_ci_paths(junit_xml, markdown)
        _note_stopped_runs(out_dir, resume)
        scratch = stack.enter_context(tempfile.TemporaryDirectory(prefix="evalrunner-lab-"))
        plans = [(spec, suite) for spec in target] if target else logged_plans(suite, Path(scratch))
        events = []
        shared = {k: v for k, v in given.items() if k not in ("iterations", "max_concurrency")}
        for spec, suite_path in plans:
            event = local_event(
                suite.name,
                _json_arg(spec, "--target"),
                iterations=given.get("iterations", 1),
                max_concurrency=given.get("max_concurrency", 10),
                **shared,
            )
            check_suite(suite_path, event)  # every event, before the first run starts
            if not quiet:
                from evalrunner.cli.inputs import warn_about_defaults
                from evalrunner.event import concurrency_cap, parse_event

                warn_about_defaults(parse_event(event, concurrency_cap=concurrency_cap()))
            events.append((event, suite_path))
        from evalrunner.engine_switch import speed_seams_from_env  # moto is not imported yet

        speed_seams_from_env()  # a bad EVALRUNNER_ENGINE_FAST is bad input: before any probe
        probe: InBackground | None = None
        if resume:  # bad input before anything is called; the target answered before
            for event, suite_path in events:
                check_resumable(event, suite_path, out_dir, resume)
        elif not no_preflight:  # every target answers before the first run starts
            probe = start_preflight(events)  # while the engine starts: its runs wait for it
        if view:  # after every check: bad input opens no browser
            from evalrunner.cli.viewing import open_viewer

            viewer = open_viewer(out_dir, [suite_path for _, suite_path in events])
        for ev, suite_path in events:
            results.append(
                _execute_local(
                    ev,
                    suite_path,
                    out_dir,
                    quiet or as_json,
                    stall_timeout=stall_timeout,
                    resume=resume,
                    preflight=False,
                    function_timeout=function_timeout,
                    probe=probe,
                )
            )
    except PreflightFailed as exc:
        raise _fail(exc, EXIT_PREFLIGHT) from None
    except ExecutionFailed as exc:
        results.append(_partial_or_fail(exc))
        stopped = True
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    finally:
        stack.close()
    codes = [report(r, as_json=as_json) for r in results]
    for result in results:
        _notes(result.notices)
    _ci_reports(results, junit_xml, markdown, quiet=as_json)
    if len(results) > 1 and not stopped:
        _leaderboard_from_runs(
            [out_dir / r.summary.reports.report for r in results], out_dir, as_json=as_json
        )
    if viewer is not None:
        out.print(f"the viewer is still at {viewer.url} (Ctrl-C stops it)", highlight=False)
        viewer.wait()
    raise typer.Exit(max(codes))


def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the reports.")] = DEFAULT_OUT,
    iterations: Annotated[int, typer.Option(help="Times every case is run.")] = 1,
    degraded: Annotated[
        bool,
        typer.Option(
            help="Run a deliberately worse assistant under the same target name, to see a "
            "regression against the previous demo run."
        ),
    ] = False,
    fail_on: FailOnOption = None,
    fail_on_regression: FailOnRegression = False,
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
    judge: JudgeOption = None,
    judge_timeout: JudgeTimeoutOption = None,
    perturb: PerturbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    junit_xml: JunitOption = None,
    markdown: MarkdownOption = None,
    no_preflight: NoPreflight = False,
) -> None:
    """Evaluate the bundled HR-policy assistant on test_suites/demo-hr.xlsx."""
    from evalrunner.demo.handler import DEGRADED_ENV
    from evalrunner.demo.suite import demo_suite_path

    previous = os.environ.get(DEGRADED_ENV)
    os.environ[DEGRADED_ENV] = "1" if degraded else "0"
    try:
        run(
            suites=[demo_suite_path()],
            target=[json.dumps(DEMO_TARGET)],
            iterations=iterations,
            metric=metric,
            out_dir=out_dir,
            fail_under=None,
            threshold=None,
            baseline=None,
            fail_on=fail_on,
            fail_on_regression=fail_on_regression,
            max_error_share=None,
            judge=judge,
            judge_timeout=judge_timeout,
            max_concurrency=10,
            as_json=as_json,
            quiet=as_json,
            perturb=perturb,
            junit_xml=junit_xml,
            markdown=markdown,
            no_preflight=no_preflight,
        )
    finally:
        if previous is None:
            os.environ.pop(DEGRADED_ENV, None)
        else:
            os.environ[DEGRADED_ENV] = previous


def start(
    event_file: Annotated[Path, typer.Option("--event", help="Event JSON file.")],
    suite: Annotated[
        Path | None,
        typer.Option(
            help="Local suite file for the event's key (default: found by the key's file name)."
        ),
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the reports.")] = DEFAULT_OUT,
    aws: Annotated[bool, typer.Option("--aws", help="Run on the deployed state machine.")] = False,
    bucket: Annotated[
        str | None, typer.Option(envvar="EVALRUNNER_BUCKET", help="Runner bucket (with --aws).")
    ] = None,
    state_machine_arn: Annotated[
        str | None,
        typer.Option(
            envvar="EVALRUNNER_STATE_MACHINE_ARN", help="Deployed state machine (with --aws)."
        ),
    ] = None,
    fail_on: FailOnOption = None,
    fail_on_regression: FailOnRegression = False,
    max_error_share: MaxErrorShare = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    junit_xml: JunitOption = None,
    markdown: MarkdownOption = None,
    no_preflight: NoPreflight = False,
    function_timeout: FunctionTimeoutOption = None,
) -> None:
    """Run an event: locally by default, or on the deployed state machine with --aws."""
    from evalrunner.event import parse_event
    from evalrunner.preflight import PreflightFailed

    try:
        if not event_file.is_file():
            raise EventError(f"--event: {event_file} does not exist")
        event = _json_arg(str(event_file), "--event")
        if isinstance(event, dict):  # the options, when given, say what fails the run
            if fail_on is not None:
                event["fail_on"] = fail_on.value
            if fail_on_regression:
                event["fail_on_regression"] = True
            if max_error_share is not None:
                event["max_error_share"] = max_error_share
        parse_event(event)
        check_out_dir(out_dir)
        check_ci_paths(junit_xml, markdown)
        if aws and function_timeout is not None:
            raise EventError(
                "--function-timeout is for a local run; deployed, each function's own limit holds"
            )
        if aws:
            if not bucket or not state_machine_arn:
                raise EventError(
                    "--aws needs --bucket and --state-machine-arn "
                    "(or EVALRUNNER_BUCKET / EVALRUNNER_STATE_MACHINE_ARN)"
                )
            from evalrunner.engine.remote import start_remote

            if suite is not None:
                check_suite(suite, event)
            bar, task = _progress_bar()
            with bar:
                result = start_remote(
                    event,
                    bucket=bucket,
                    state_machine_arn=state_machine_arn,
                    out_dir=out_dir,
                    suite=suite,
                    on_progress=lambda p: bar.update(
                        task, total=p.total or None, completed=p.done, description=p.phase
                    ),
                )
        else:
            local_suite = suite or _find_local_suite(event["key"], event_file.parent)
            _note_stopped_runs(out_dir, None)
            result = _execute_local(
                event,
                local_suite,
                out_dir,
                as_json,
                preflight=not no_preflight,
                function_timeout=function_timeout,
            )
    except PreflightFailed as exc:
        raise _fail(exc, EXIT_PREFLIGHT) from None
    except ExecutionFailed as exc:
        result = _partial_or_fail(exc)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    code = report(result, as_json=as_json)
    _notes(result.notices)
    _ci_reports([result], junit_xml, markdown, quiet=as_json)
    raise typer.Exit(code)


def _partial_or_fail(exc: ExecutionFailed) -> RunResult:
    """The partial run of a stopped or stalled run whose finished cases' reports were
    written, after its error line (why it stopped, the ``--resume`` that runs the rest): it
    is then reported like every other outcome, its verdict ``PARTIAL`` (exit code 3) on the
    terminal and in ``--junit-xml`` / ``--markdown``. Any other failed run exits 3 on the
    error alone."""
    from evalrunner.engine.run_types import RunResult  # loaded: the engine raised exc

    partial = exc.result if isinstance(exc, PartialRun) else None
    if not isinstance(partial, RunResult):
        raise _fail(exc, EXIT_RUN) from None
    _fail(exc, EXIT_RUN)  # prints the error line; the exit code is the verdict's (3)
    return partial


def _note_stopped_runs(out_dir: Path, resume: str | None) -> None:
    """Name what killed or stopped runs left in ``out_dir`` (saved cases to resume, claims of
    report sets never finished), on stderr, before the new run starts."""
    from evalrunner.engine.saved_runs import stopped_run_notices

    _notes(stopped_run_notices(out_dir, resuming=resume))


def _notes(notices: list[str]) -> None:
    for notice in notices:
        err.print(f"[yellow]note:[/] {escape(notice)}", highlight=False, soft_wrap=True)


def _ci_reports(
    results: list[RunResult], junit: Path | None, markdown: Path | None, *, quiet: bool
) -> None:
    for path in write_ci_reports(results, junit=junit, markdown=markdown):
        if not quiet:
            out.print(f"CI report: {path}", highlight=False, markup=False)


def _find_local_suite(key: str, event_dir: Path) -> Path:
    name = Path(key).name
    for candidate in (Path(key), event_dir / key, event_dir / name, Path("test_suites") / name):
        if candidate.is_file():
            return candidate
    raise EventError(f"key: no local file for {key!r}; pass it with --suite FILE")
