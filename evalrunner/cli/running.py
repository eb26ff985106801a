"""The commands that run a suite: ``run`` (a suite against one or more targets on this
machine), ``demo`` (the bundled HR assistant) and ``start`` (an event, locally or on the deployed
state machine), with the console report and exit code of a finished run."""

from __future__ import annotations

import json
import os
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

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
    FailOnOption,
    FailOnRegression,
    FunctionTimeoutOption,
    JudgeOption,
    JudgeTimeoutOption,
    MaxErrorShare,
    NoPreflight,
    _fail,
    _json_arg,
    _pairs,
    _progress_bar,
    check_out_dir,
    err,
    judge_arg,
    out,
)
from evalrunner.cli.leaderboards import _leaderboard_from_runs
from evalrunner.errors import EvalRunnerError, EventError, ExecutionFailed, PartialRun
from evalrunner.gc_freeze import older_objects_frozen
from evalrunner.jsonout import dump_json
from evalrunner.launch import (
    check_resumable,
    check_suite,
    local_event,
    preflight_local,
    run_local,
)
from evalrunner.preflight import PreflightFailed

if TYPE_CHECKING:  # the engine (moto) is imported by the commands that run, not at startup
    from evalrunner.engine.local import RunResult
    from evalrunner.reports.summary import RunSummary

DEMO_TARGET = {"lambdaArn": "evalrunner-demo-hr"}

PerturbOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Robustness: also run every case perturbed, KIND[:INTENSITY[:SEED]], e.g. "
        "typos:0.1 or synonym (repeatable); 'evalrunner perturbations' lists the kinds."
    ),
]


def perturbation_arg(text: str) -> dict[str, Any]:
    """``--perturb KIND[:INTENSITY[:SEED]]`` as an entry of the event's perturbations (the
    event's validation checks the kind and the ranges)."""
    parts = text.split(":")
    if len(parts) > 3 or not parts[0]:
        raise EventError(
            f"--perturb: {text!r} is not KIND[:INTENSITY[:SEED]], e.g. typos:0.1 or typos:0.1:7"
        )
    entry: dict[str, Any] = {"kind": parts[0]}
    try:
        if len(parts) > 1 and parts[1]:
            entry["intensity"] = float(parts[1])
        if len(parts) > 2 and parts[2]:
            entry["seed"] = int(parts[2])
    except ValueError:
        raise EventError(
            f"--perturb: {text!r}: the intensity must be a number between 0 and 1 and the "
            "seed a whole number, e.g. typos:0.1:7"
        ) from None
    return entry


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
            )
        bar, task = _progress_bar()
        with bar:

            def update(p: Any) -> None:
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
            )


def _report(result: RunResult, *, as_json: bool) -> int:
    """Print a finished run; its exit code is its verdict's (reports/verdict.py)."""
    summary = result.summary
    if as_json:  # the execution's output, as the state machine returned it
        out.print_json(dump_json(result.output))
        return summary.verdict.exit_code
    out.print(metrics_view(summary, out.width))
    if summary.items and not summary.answered_runs():
        out.print(
            "[bold red]no target call succeeded[/]: nothing was measured (exit code 4); "
            "see the error column of details.csv"
        )
    elif summary.target_errors or summary.task_failures:
        out.print(
            f"[yellow]{summary.target_errors} target errors, "
            f"{summary.task_failures} failed tasks (see details.csv)[/]"
        )
    for failure in summary.step_failures:
        out.print(f"[yellow]step failure: {escape(failure)}[/]")
    for gate in summary.gates:
        mark = "[green]pass[/]" if gate.passed else "[red]FAIL[/]"
        avg = "—" if gate.average is None else f"{gate.average:.3f}"
        op = ">=" if gate.higher_is_better else "<="
        out.print(f"gate {escape(gate.gate)} {op} {gate.threshold}: {avg} {mark}")
    _print_findings(summary)  # a regression gate with no baseline: a note of the verdict
    out.print("reports:")
    for path in result.files:
        out.print(f"  {path}", markup=False, highlight=False)
    out.print(f"finished in {result.seconds:.1f} s")
    _print_verdict(summary)
    return summary.verdict.exit_code


def _print_verdict(summary: RunSummary) -> None:
    """The run's verdict, last (what CI logs end on): headline, exit code, reasons, notes."""
    verdict = summary.verdict
    colour = {"passed": "green", "partial": "yellow"}.get(verdict.outcome, "red")
    out.print(
        f"[bold {colour}]verdict: {verdict.headline}[/] (exit code {verdict.exit_code}, "
        f"--fail-on {verdict.policy.fail_on})"
    )
    for reason in verdict.reasons:
        out.print(f"  - {reason}", highlight=False, markup=False)
    for note in verdict.notes:
        out.print(f"  - note: {note}", highlight=False, markup=False)


#: The metric table's columns; at widths where they do not fit unbroken, each metric is two
#: lines instead (:func:`metrics_view`).
COLUMNS = (
    "Metric",
    "Evaluator",
    "Average",
    "Pass rate",
    "Threshold",
    "Count",
    "Skipped",
    "Errored",
)


def metrics_view(summary: RunSummary, width: int) -> RenderableType:
    """The metrics of a run for a terminal ``width`` columns wide: a table when every column
    fits unbroken, else stacked, one metric per two lines (an 80-column terminal, a CI log
    with no TTY): a metric's name is never broken or cut to ``Evalua…``."""
    title = f"{summary.target} — {summary.suite} ({summary.items} runs of {summary.cases} cases)"
    rows = [
        (
            m,
            "—" if m.average is None else f"{m.average:.3f}",
            "—" if m.pass_rate is None else f"{m.pass_rate:.0%}",
        )
        for m in summary.metrics
    ]
    table = Table(title=Text(title), title_justify="left")
    for col in COLUMNS:
        right = col not in ("Metric", "Evaluator")
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
    for m, avg, rate in rows:
        table.add_row(
            Text(m.metric, style="bold" if m.primary else ""),
            Text(m.evaluator),
            avg,
            rate,
            f"{m.threshold:.2f}",
            str(m.count),
            str(m.skipped),
            str(m.errored),
        )
    if Measurement.get(out, out.options.update_width(10_000), table).maximum <= width:
        return table
    lines = [Text(title, style="bold")]
    for m, avg, rate in rows:
        name = Text(m.metric, style="bold" if m.primary else "")
        if m.evaluator != m.metric:
            name.append(f" ({m.evaluator})", style="")
        lines.append(name)
        lines.append(
            Text(
                f"  average {avg} · pass rate {rate} ({'≥' if m.higher_is_better else '≤'} "
                f"{m.threshold:.2f}) · {m.count} scored, {m.skipped} skipped, "
                f"{m.errored} errored"
            )
        )
    return Group(*lines)


def _print_findings(summary: RunSummary) -> None:
    regression = summary.regression
    if regression:
        colour = {"regression": "red", "improvement": "green"}.get(regression.verdict, "white")
        out.print(
            f"[bold {colour}]{regression.verdict}[/] against run "
            f"{escape(regression.baseline_run_id)} ({regression.baseline_started_at})"
        )
        for reason in regression.reasons:
            out.print(f"  - {reason}", highlight=False, markup=False)
    for rob in summary.robustness:
        score = "—" if rob.score is None else f"{rob.score:.2f}"
        what = "must flip" if rob.expect_flip else "held"
        out.print(
            f"robustness under {rob.name}: {score} ({rob.held} of {rob.compared} cases {what}, "
            f"{rob.broken} broke, {rob.fixed} fixed)",
            highlight=False,
            markup=False,
        )
    # A baseline that was skipped is always named: a regression gate rests on it.
    for problem in summary.problems:
        if problem.type == "baseline_ignored":
            out.print(f"[yellow]{escape(problem.description)}[/]", highlight=False)
    problems = [p for p in summary.problems if p.type != "baseline_ignored"]
    high = [p for p in problems if p.severity == "high"]
    if problems:
        out.print(f"{len(problems)} problems ({len(high)} high) — see problems.json:")
        for problem in problems[:5]:
            out.print(
                f"  - [{problem.severity}] {problem.description}",
                highlight=False,
                markup=False,
            )
            if problem.type == "model_unavailable":  # the fix is the point here
                out.print(f"    {problem.suggested_action}", highlight=False, markup=False)


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
    suite: Annotated[Path, typer.Option(help="Suite file: .xlsx, .csv or .json.")],
    target: Annotated[
        list[str] | None,
        typer.Option(
            help="The event's target object as JSON, or a file. Repeat it to compare several "
            "targets on the suite (a leaderboard). Optional when every case carries its "
            "answer (answer_from_system / actual_answer): the suite is scored as logged and "
            "the reports are named after it."
        ),
    ] = None,
    iterations: Annotated[int, typer.Option(help="Times every case is run.")] = 1,
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
    plugin: Annotated[
        list[str] | None,
        typer.Option(help="Module (name or .py file) of your own metrics (repeatable)."),
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the reports.")] = DEFAULT_OUT,
    fail_under: Annotated[
        list[str] | None,
        typer.Option(
            help="Gate METRIC=VALUE: exit 1 when the metric's average is below (repeatable)."
        ),
    ] = None,
    threshold: Annotated[
        list[str] | None, typer.Option(help="Success threshold METRIC=VALUE (repeatable).")
    ] = None,
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
    max_concurrency: Annotated[int, typer.Option(help="Cases run at once.")] = 10,
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
            "options and --out as the stopped run.",
        ),
    ] = None,
    junit_xml: JunitOption = None,
    markdown: MarkdownOption = None,
    no_preflight: NoPreflight = False,
) -> None:
    """Evaluate a suite against a target on this machine (the embedded engine)."""
    stack = ExitStack()
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
        for spec, suite_path in plans:
            event = local_event(
                suite.name,
                _json_arg(spec, "--target"),
                iterations=iterations,
                max_concurrency=max_concurrency,
                metrics=metric or None,
                plugins=plugin or None,
                fail_under=_pairs(fail_under, "--fail-under") if fail_under else None,
                thresholds=_pairs(threshold, "--threshold") if threshold else None,
                baseline=baseline,
                judge=judge_arg(judge, judge_timeout),
                evaluator_options=(
                    _json_arg(evaluator_options, "--evaluator-options")
                    if evaluator_options
                    else None
                ),
                max_text_chars=max_text_chars,
                perturbations=[perturbation_arg(p) for p in perturb] if perturb else None,
                fail_on=fail_on.value if fail_on else None,
                fail_on_regression=fail_on_regression,
                max_error_share=max_error_share,
            )
            check_suite(suite_path, event)  # every event, before the first run starts
            if not quiet:
                from evalrunner.cli.inputs import warn_about_defaults
                from evalrunner.event import parse_event

                warn_about_defaults(parse_event(event))
            events.append((event, suite_path))
        from evalrunner.engine.moto_compat import speed_seams_from_env

        speed_seams_from_env()  # a bad EVALRUNNER_ENGINE_FAST is bad input: before any probe
        for event, suite_path in events:
            if resume:  # bad input before anything is called; the target answered before
                check_resumable(event, suite_path, out_dir, resume)
            elif not no_preflight:  # every target answers before the first run starts
                preflight_local(event, suite_path)
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
    codes = [_report(r, as_json=as_json) for r in results]
    for result in results:
        _notes(result.notices)
    _ci_reports(results, junit_xml, markdown, quiet=as_json)
    if len(results) > 1 and not stopped:
        _leaderboard_from_runs(
            [out_dir / r.summary.reports.report for r in results], out_dir, as_json=as_json
        )
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
            suite=demo_suite_path(),
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
) -> None:
    """Run an event: locally by default, or on the deployed state machine with --aws."""
    from evalrunner.event import parse_event

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
                event, local_suite, out_dir, as_json, preflight=not no_preflight
            )
    except PreflightFailed as exc:
        raise _fail(exc, EXIT_PREFLIGHT) from None
    except ExecutionFailed as exc:
        result = _partial_or_fail(exc)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    code = _report(result, as_json=as_json)
    _notes(result.notices)
    _ci_reports([result], junit_xml, markdown, quiet=as_json)
    raise typer.Exit(code)


def _partial_or_fail(exc: ExecutionFailed) -> RunResult:
    """The partial run of a stopped or stalled run whose finished cases' reports were
    written, after its error line (why it stopped, the ``--resume`` that runs the rest): it
    is then reported like every other outcome, its verdict ``PARTIAL`` (exit code 3) on the
    terminal and in ``--junit-xml`` / ``--markdown``. Any other failed run exits 3 on the
    error alone."""
    partial = exc.result if isinstance(exc, PartialRun) else None
    if partial is None:
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
