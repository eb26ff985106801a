"""The ``evalrunner`` command. Exit codes: 0 success, 1 a gate failed (or a regression with
--fail-on-regression), 2 bad input (nothing started), 3 the run itself failed, 4 the run
finished but no target call succeeded (nothing was measured)."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar
from rich.table import Table

from evalrunner.errors import ConfigError, EvalRunnerError, EventError, ExecutionFailed
from evalrunner.jsonout import dump_json

if TYPE_CHECKING:  # the engine (moto) is imported by the commands that run, not at startup
    from evalrunner.engine.local import RunResult
    from evalrunner.reports.summary import RunSummary

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Regression testing for RAG and LLM agents, locally or on AWS Step Functions. "
    "Exit codes: 0 ok; 1 a gate failed (or a regression with --fail-on-regression); 2 bad "
    "input, nothing started; 3 the run itself failed; 4 no target call succeeded.",
)
out = Console()
err = Console(stderr=True)

EXIT_GATE, EXIT_INPUT, EXIT_RUN, EXIT_NO_ANSWER = 1, 2, 3, 4
DEFAULT_OUT = Path("evalrunner-out")
DEMO_TARGET = {"lambdaArn": "evalrunner-demo-hr"}


def _fail(exc: EvalRunnerError, code: int) -> typer.Exit:
    err.print(f"[bold red]error:[/] {exc.message}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _json_arg(value: str, what: str) -> Any:
    """A JSON literal, or the path of a file holding one."""
    text = value
    path = Path(value)
    if not value.lstrip().startswith(("{", "[")) and path.is_file():
        text = path.read_text("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EventError(f"{what}: neither valid JSON nor a readable JSON file ({exc})") from exc


def _pairs(values: list[str] | None, option: str) -> dict[str, float]:
    pairs: dict[str, float] = {}
    for value in values or []:
        name, sep, number = value.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            parsed = float(number)
            if not math.isfinite(parsed):
                raise ValueError
            pairs[name.strip()] = parsed
        except ValueError:
            raise EventError(
                f"{option} {value!r}: expected METRIC=NUMBER with a finite number (not NaN "
                f"or Infinity), e.g. {option} 'ROUGE-L=0.4'"
            ) from None
    return pairs


def check_out_dir(out_dir: Path) -> None:
    """Refuse an ``--out`` that cannot hold the reports before anything runs (a file, a
    folder inside a file, a folder this user cannot write), instead of calling every target
    and failing at the last step. Creates nothing: bad input leaves nothing behind."""
    path = out_dir
    while not path.exists():
        if path.parent == path:
            break
        path = path.parent
    if path.exists() and not path.is_dir():
        where = "is a file" if path == out_dir else f"is inside {path}, which is a file"
        raise ConfigError(f"--out: {out_dir} {where}; give a folder, e.g. --out reports/")
    if path.exists() and not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(
            f"--out: {path} is not writable by this user; give a folder you can write to"
        )


def _check_suite(path: Path, event: dict[str, Any]) -> None:
    """Check the suite here first, as Prepare will, so bad input fails before anything is
    started or written."""
    from evalrunner.event import parse_event
    from evalrunner.pipeline.prepare import settle
    from evalrunner.suite.readers import read_suite_file

    settle(parse_event(event), read_suite_file(path))


def _progress_bar() -> tuple[Bar, Any]:
    bar = Bar(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors: {task.fields[errors]}"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    )
    task = bar.add_task("running cases", total=None, errors=0)
    return bar, task


def judge_cache_dir() -> Path:
    """Where local runs keep judge replies, so an unchanged case costs nothing next time
    (the embedded bucket disappears with the run)."""

    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalrunner" / "judge"


def _execute_local(
    event: dict[str, Any],
    suite: Path,
    out_dir: Path,
    quiet: bool,
    *,
    stall_timeout: float | None = None,
    resume: str | None = None,
) -> RunResult:
    from evalrunner.engine import LocalEngine

    judge = event.get("judge")
    if isinstance(judge, dict) and judge.get("cache", True) and "cache_dir" not in judge:
        event = {**event, "judge": {**judge, "cache_dir": str(judge_cache_dir())}}
    _check_suite(suite, event)
    engine = LocalEngine(stall_timeout=stall_timeout)
    if quiet:
        return engine.run(event, suite=suite, out_dir=out_dir, resume=resume)
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

        return engine.run(event, suite=suite, out_dir=out_dir, on_progress=update, resume=resume)


def _report(result: RunResult, *, as_json: bool, fail_on_regression: bool = False) -> int:
    summary = result.summary
    if as_json:  # the execution's output, as the state machine returned it
        out.print_json(dump_json(result.output))
        return _exit_code(summary, fail_on_regression)
    title = f"{summary.target} — {summary.suite} ({summary.items} runs of {summary.cases} cases)"
    table = Table(title=title)
    columns = (
        "Metric",
        "Evaluator",
        "Average",
        "Pass rate",
        "Threshold",
        "Count",
        "Skipped",
        "Errored",
    )
    for col in columns:
        table.add_column(col, justify="left" if col in ("Metric", "Evaluator") else "right")
    for m in summary.metrics:
        avg = "—" if m.average is None else f"{m.average:.3f}"
        rate = "—" if m.pass_rate is None else f"{m.pass_rate:.0%}"
        name = f"[bold]{m.metric}[/]" if m.primary else m.metric
        table.add_row(
            name,
            m.evaluator,
            avg,
            rate,
            f"{m.threshold:.2f}",
            str(m.count),
            str(m.skipped),
            str(m.errored),
        )
    out.print(table)
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
        out.print(f"[yellow]step failure: {failure}[/]")
    for gate in summary.gates:
        mark = "[green]pass[/]" if gate.passed else "[red]FAIL[/]"
        avg = "—" if gate.average is None else f"{gate.average:.3f}"
        op = ">=" if gate.higher_is_better else "<="
        out.print(f"gate {gate.gate} {op} {gate.threshold}: {avg} {mark}")
    _print_findings(summary)
    out.print("reports:")
    for path in result.files:
        out.print(f"  {path}")
    out.print(f"finished in {result.seconds:.1f} s")
    return _exit_code(summary, fail_on_regression)


def _print_findings(summary: RunSummary) -> None:
    regression = summary.regression
    if regression:
        colour = {"regression": "red", "improvement": "green"}.get(regression.verdict, "white")
        out.print(
            f"[bold {colour}]{regression.verdict}[/] against run "
            f"{regression.baseline_run_id} ({regression.baseline_started_at})"
        )
        for reason in regression.reasons:
            out.print(f"  - {reason}", highlight=False, markup=False)
    problems = summary.problems
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


def _exit_code(summary: RunSummary, fail_on_regression: bool) -> int:
    """4 before 1: a run that measured nothing has no gate verdict worth reading."""
    if summary.items and not summary.answered_runs():
        return EXIT_NO_ANSWER
    if not summary.gates_passed or (fail_on_regression and summary.regressed):
        return EXIT_GATE
    return 0


JudgeOption = Annotated[
    str | None,
    typer.Option(
        help="The LLM judge for judge metrics, as JSON or a file: "
        '{"openai": {"base_url": "...", "model": "..."}} or {"bedrock": {"model_id": "..."}}. '
        "Without it, judge metrics are skipped with a reason."
    ),
]

FailOnRegression = Annotated[
    bool,
    typer.Option(
        "--fail-on-regression",
        help="Exit 1 when the run is a regression against its baseline (the previous run of "
        "the same target and suite, or --baseline).",
    ),
]


@app.command()
def run(
    suite: Annotated[Path, typer.Option(help="Suite file: .xlsx, .csv or .json.")],
    target: Annotated[
        list[str],
        typer.Option(
            help="The event's target object as JSON, or a file. Repeat it to compare several "
            "targets on the suite (a leaderboard)."
        ),
    ],
    iterations: Annotated[int, typer.Option(help="Times every case is run.")] = 1,
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
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
    fail_on_regression: FailOnRegression = False,
    judge: JudgeOption = None,
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
    resume: Annotated[
        str | None,
        typer.Option(
            help="Run id of a run that stopped part-way (its error message names it): "
            "the cases it finished are kept and only the rest are run. Same --suite, "
            "--target and --out as the stopped run.",
        ),
    ] = None,
) -> None:
    """Evaluate a suite against a target on this machine (the embedded engine)."""
    try:
        if not suite.is_file():
            raise EventError(f"--suite: {suite} does not exist or is not a file")
        if resume and len(target) > 1:
            raise EventError("--resume continues one run: give exactly one --target with it")
        check_out_dir(out_dir)
        events = []
        for spec in target:
            event: dict[str, Any] = {
                "key": f"test-suites/{suite.name}",
                "iterations": iterations,
                "target": _json_arg(spec, "--target"),
                "max_concurrency": max_concurrency,
            }
            if metric:
                event["metrics"] = metric
            if fail_under:
                event["fail_under"] = _pairs(fail_under, "--fail-under")
            if threshold:
                event["thresholds"] = _pairs(threshold, "--threshold")
            if baseline:
                event["baseline"] = baseline
            if judge:
                event["judge"] = _json_arg(judge, "--judge")
            if evaluator_options:
                event["evaluator_options"] = _json_arg(evaluator_options, "--evaluator-options")
            if max_text_chars is not None:
                event["max_text_chars"] = max_text_chars
            _check_suite(suite, event)  # every target's event, before the first run starts
            events.append(event)
        results = [
            _execute_local(
                ev,
                suite,
                out_dir,
                quiet or as_json,
                stall_timeout=stall_timeout,
                resume=resume,
            )
            for ev in events
        ]
    except ExecutionFailed as exc:
        raise _fail(exc, EXIT_RUN) from None
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    codes = [_report(r, as_json=as_json, fail_on_regression=fail_on_regression) for r in results]
    if len(results) > 1:
        _leaderboard_from_runs(
            [out_dir / r.summary.reports.report for r in results], out_dir, as_json=as_json
        )
    raise typer.Exit(max(codes))


@app.command()
def leaderboard(
    runs: Annotated[
        list[str],
        typer.Argument(
            help="Runs of one suite (2 or more): report.json files, or run ids of runs whose "
            "reports are under --out."
        ),
    ],
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for the reports.")] = DEFAULT_OUT,
    as_json: Annotated[bool, typer.Option("--json", help="Print the leaderboard as JSON.")] = False,
) -> None:
    """Compare runs of one suite: best target per metric, hardest cases, fastest, costliest."""
    try:
        check_out_dir(out_dir)
        _leaderboard_from_runs([_report_path(r, out_dir) for r in runs], out_dir, as_json=as_json)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None


def _report_path(run: str, out_dir: Path) -> Path:
    """A report.json path as given, or the report of the run with that id under ``out_dir``."""
    path = Path(run)
    if path.is_file():
        return path
    from evalrunner.reports.publish import (
        MANIFEST_NAME,
        SUMMARY_NAME,
        local_complete_sets,
        local_verified,
        read_summary,
    )

    for folder in sorted(p for p in out_dir.glob("test-reports/*") if p.is_dir()):
        for _, manifest_path, manifest in local_complete_sets(folder):  # complete sets only
            key = manifest_path.relative_to(out_dir).as_posix()[: -len(MANIFEST_NAME)]
            summary = read_summary(local_verified(out_dir, manifest, key + SUMMARY_NAME))
            if summary is not None and summary.run_id == run:
                return out_dir / summary.reports.report
    raise EventError(f"{run!r} is neither a report.json file nor a run id found under {out_dir}")


def _leaderboard_from_runs(paths: list[Path], out_dir: Path, *, as_json: bool) -> None:
    from datetime import UTC, datetime

    from evalrunner.reports.html import render_leaderboard
    from evalrunner.reports.leaderboard import build_leaderboard
    from evalrunner.reports.model import ReportData

    runs = []
    for path in paths:
        if not path.is_file():
            raise EventError(f"{path}: no such report.json")
        try:
            runs.append(ReportData.model_validate_json(path.read_bytes()))
        except ValueError as exc:
            raise EventError(f"{path}: not an evalrunner report.json ({exc})") from None
    now = datetime.now(UTC)
    try:
        board = build_leaderboard(runs, created_at=now.isoformat(timespec="seconds"))
    except ValueError as exc:
        raise EventError(str(exc)) from None
    folder = out_dir / "test-reports" / "_leaderboard"
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{now:%y%m%d-%H%M%S}-leaderboard"
    json_path, html_path = stem.with_suffix(".json"), stem.with_suffix(".html")
    json_path.write_text(board.model_dump_json(indent=2), encoding="utf-8")
    html_path.write_text(render_leaderboard(board), encoding="utf-8")
    if as_json:
        out.print_json(board.model_dump_json())
        return
    table = Table(title=f"leaderboard — {board.suite}")
    table.add_column("Metric")
    for entry in board.entries:
        table.add_column(entry.target, justify="right")
    for info in board.metrics:
        if not info.primary:
            continue
        cells = []
        for entry in board.entries:
            value = entry.averages.get(info.metric)
            text = "—" if value is None else f"{value:.3f}"
            best = board.best_per_metric.get(info.metric) == entry.target
            cells.append(f"[bold green]{text}[/]" if best else text)
        table.add_row(info.metric, *cells)
    out.print(table)
    if board.difficult_cases:
        hardest = board.difficult_cases[0]
        out.print(
            f"most difficult case: {hardest.case_id} (failed by {', '.join(hardest.failed_by)})"
        )
    for label, name in (("fastest", board.fastest), ("costliest", board.costliest)):
        if name:
            out.print(f"{label}: {name}")
    out.print(f"leaderboard: {html_path}")


@app.command()
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
    fail_on_regression: FailOnRegression = False,
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
    judge: JudgeOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
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
            fail_on_regression=fail_on_regression,
            judge=judge,
            max_concurrency=10,
            as_json=as_json,
            quiet=as_json,
        )
    finally:
        if previous is None:
            os.environ.pop(DEGRADED_ENV, None)
        else:
            os.environ[DEGRADED_ENV] = previous


@app.command()
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
    fail_on_regression: FailOnRegression = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Run an event: locally by default, or on the deployed state machine with --aws."""
    from evalrunner.event import parse_event

    try:
        if not event_file.is_file():
            raise EventError(f"--event: {event_file} does not exist")
        event = _json_arg(str(event_file), "--event")
        parse_event(event)
        check_out_dir(out_dir)
        if aws:
            if not bucket or not state_machine_arn:
                raise EventError(
                    "--aws needs --bucket and --state-machine-arn "
                    "(or EVALRUNNER_BUCKET / EVALRUNNER_STATE_MACHINE_ARN)"
                )
            from evalrunner.engine.remote import start_remote

            if suite is not None:
                _check_suite(suite, event)
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
            result = _execute_local(event, local_suite, out_dir, as_json)
    except ExecutionFailed as exc:
        raise _fail(exc, EXIT_RUN) from None
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    raise typer.Exit(_report(result, as_json=as_json, fail_on_regression=fail_on_regression))


def _find_local_suite(key: str, event_dir: Path) -> Path:
    name = Path(key).name
    for candidate in (Path(key), event_dir / key, event_dir / name, Path("test_suites") / name):
        if candidate.is_file():
            return candidate
    raise EventError(f"key: no local file for {key!r}; pass it with --suite FILE")


@app.command()
def validate(event_file: Annotated[Path, typer.Argument(help="Event JSON file.")]) -> None:
    """Check an event against the contract; exit 0 when valid."""
    from evalrunner.event import parse_event

    try:
        if not event_file.is_file():
            raise EventError(f"{event_file} does not exist")
        parsed = parse_event(_json_arg(str(event_file), str(event_file)))
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    out.print(
        f"[green]valid[/]: {parsed.target_kind} target, {parsed.iterations} iteration(s), "
        f"metrics: {', '.join(parsed.metrics)}"
    )


@app.command()
def schema(name: Annotated[str, typer.Argument(help="Which schema: event.")] = "event") -> None:
    """Print a JSON Schema shipped with evalrunner."""
    from evalrunner.event import event_schema

    if name != "event":
        err.print(f"[red]error:[/] unknown schema {name!r}; available: event")
        raise typer.Exit(EXIT_INPUT)
    sys.stdout.write(json.dumps(event_schema(), indent=2) + "\n")


@app.command()
def template(
    path: Annotated[Path, typer.Argument(help="Where to write the .xlsx template.")],
) -> None:
    """Write the suite template: a data sheet with headers and validation, and instructions."""
    from evalrunner.suite.template import write_template

    if path.suffix.lower() != ".xlsx":
        err.print(f"[red]error:[/] {path}: the template is an .xlsx file; name it e.g. suite.xlsx")
        raise typer.Exit(EXIT_INPUT)
    write_template(path)
    out.print(f"wrote {path}")


@app.command("metrics")
def list_metrics() -> None:
    """List the evaluators of this release with their metrics and default thresholds."""
    from evalrunner.evaluators import available
    from evalrunner.models import default_model

    table = Table(title="evaluators")
    for col in ("Evaluator", "Needs", "Metrics (primary first)", "Threshold"):
        table.add_column(col)
    for name, cls in available().items():
        primary = cls.primary_metric()
        metrics = [primary, *[m for m in cls.metrics if m is not primary]]
        direction = "higher" if primary.higher_is_better else "lower"
        needs = cls.requires.value
        roles = [r for r in (getattr(cls, "role", None), *getattr(cls, "extra_roles", ())) if r]
        if roles:
            needs = ", ".join(f"{r.value} model ({default_model(r)})" for r in roles)
        table.add_row(
            name,
            needs,
            ", ".join(m.name for m in metrics),
            f"{primary.threshold:.2f} ({direction} is better)",
        )
    out.print(table)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
