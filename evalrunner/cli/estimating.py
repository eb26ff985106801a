"""``evalrunner estimate``: what a run of a suite would cost, before it runs (judge calls and
tokens, GPU minutes, the AWS cost of the run deployed), or with no ``--suite`` file, what
each cell of the project file's matrix and the whole matrix would cost (the cells exactly as
``evalrunner run`` builds them). Nothing is called or started."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from evalrunner.cli.common import (
    EXIT_INPUT,
    ConfigOption,
    JudgeMetricOption,
    JudgeOption,
    PerturbOption,
    SuitesOption,
    _fail,
    _json_arg,
    judge_metrics_arg,
    out,
    perturbation_arg,
)
from evalrunner.cli.projects import given_options, project_file
from evalrunner.errors import EvalRunnerError, EventError
from evalrunner.jsonout import dump_json
from evalrunner.launch import local_event

if TYPE_CHECKING:  # pydantic models: imported when the command runs, not for --help
    from evalrunner.estimate.model import RunEstimate
    from evalrunner.estimate.monitor import MonitorEstimate
    from evalrunner.project.estimate import ProjectEstimate

#: The target of an estimate that names none and whose suite has no logged answers: the
#: estimate calls no target, so only its name would show.
PLACEHOLDER_TARGET: dict[str, Any] = {"lambdaArn": "target-to-estimate"}


def estimate_for(event: dict[str, Any], suite: Path) -> RunEstimate:
    """The estimate of ``event`` over the suite file, validated as a run would be."""
    from evalrunner.project.estimate import estimate_event

    return estimate_event(event, suite)


def event_estimate_for(event_file: Path, suite: Path | None) -> RunEstimate:
    """The estimate of the event in ``event_file`` over its suite (``suite``, else found by
    the key's file name as ``evalrunner start`` finds it). An event with ``redteam`` counts
    Prepare's attack writing too (:mod:`evalrunner.redteam.estimate`)."""
    from evalrunner.cli.running import _find_local_suite
    from evalrunner.event import parse_event
    from evalrunner.input_limits import SuiteLimits

    if not event_file.is_file():
        raise EventError(f"--event: {event_file} does not exist")
    event = _json_arg(str(event_file), "--event")
    if not isinstance(event, dict):
        raise EventError("--event: must hold a JSON object (a run event)")
    parsed = parse_event(event)
    path = suite or _find_local_suite(parsed.key, event_file.parent)
    if parsed.spec.redteam is None:
        return estimate_for(event, path)
    from evalrunner.redteam.estimate import estimate_redteam

    source = path.read_bytes() if parsed.spec.redteam.purpose is None else None
    return estimate_redteam(parsed, source, SuiteLimits.from_env())


def monitor_estimate_for(
    event: dict[str, Any],
    suite: Path,
    *,
    per_day: int,
    sample: str,
    runs_per_day: float,
    alarms: int,
    mask_names: bool = False,
) -> MonitorEstimate:
    """The estimate of a day of monitoring, the suite file standing for the interactions."""
    from evalrunner.estimate.monitor import estimate_monitor
    from evalrunner.event import parse_event
    from evalrunner.pipeline.prepare import settle
    from evalrunner.suite.readers import read_suite_file

    if per_day < 1:
        raise EventError("--monitor-per-day: give the interactions a day (at least 1)")
    if runs_per_day <= 0:
        raise EventError("--runs-per-day: give how many times a day the monitor runs (e.g. 24)")
    share = sample_share(sample, per_day, runs_per_day)
    cases = read_suite_file(suite)
    if not cases.cases:
        raise EventError(f"--suite: {suite} holds no interactions")
    settled = settle(parse_event(event), cases)
    return estimate_monitor(
        settled,
        cases,
        per_day=per_day,
        share=share,
        runs_per_day=runs_per_day,
        alarms=alarms,
        mask_names=mask_names,
    )


def sample_share(sample: str, per_day: int, runs_per_day: float) -> float:
    """``--sample``: a share (``5%``, ``0.05``) or interactions per run (``200``)."""
    text = sample.strip()
    try:
        if text.endswith("%"):
            share = float(text[:-1]) / 100
        elif "." in text:
            share = float(text)
        else:
            share = int(text) * runs_per_day / per_day
    except ValueError:
        raise EventError(
            f"--sample {sample!r}: give a share (5%, 0.05) or interactions per run (200)"
        ) from None
    if not 0 < share <= 1:
        raise EventError(f"--sample {sample!r}: the share must be above 0 and at most 100%")
    return share


def _money(value: float | None, currency: str) -> str:
    return "no price listed" if value is None else f"{value:,.4f} {currency}"


def _amount(value: float | None) -> str:
    return "no price" if value is None else f"{value:,.4f}"


def _print(estimate: RunEstimate) -> None:
    table = Table(title=f"Estimate: {estimate.items} runs of {estimate.cases} cases")
    table.add_column("What")
    table.add_column("Estimate", justify="right")
    table.add_row("cases × iterations", f"{estimate.cases} × {estimate.iterations}")
    table.add_row("perturbations", str(estimate.perturbations))
    table.add_row("case runs", str(estimate.items))
    table.add_row("Map tasks (child executions)", str(estimate.aws.map_child_executions))
    judge = estimate.judge
    if judge is not None:
        table.add_row("judge model", escape(judge.model or "(none configured)"))
        table.add_row("judge calls", f"{judge.calls:,}")
        table.add_row("judge input tokens", f"{judge.input_tokens:,}")
        table.add_row("judge output tokens", f"{judge.output_tokens:,}")
        table.add_row("judge cost", _money(judge.cost, estimate.currency))
    if (writing := estimate.redteam) is not None:  # Prepare's, before the run
        table.add_row("red team: attacks (at most)", f"{writing.attacks:,}")
        table.add_row("red team: attack-writing judge calls", f"{writing.calls:,}")
        table.add_row(
            "red team: attack-writing tokens (in / out)",
            f"{writing.input_tokens:,} / {writing.output_tokens:,}",
        )
        table.add_row("red team: attack-writing cost", _money(writing.cost, estimate.currency))
    aws = estimate.aws
    table.add_row("GPU minutes", f"{estimate.gpu_minutes:g}")
    table.add_row("Step Functions transitions", f"{aws.state_transitions:,}")
    table.add_row("Lambda GB-seconds", f"{aws.lambda_gb_seconds:,}")
    table.add_row("S3 requests (PUT / GET)", f"{aws.s3_puts:,} / {aws.s3_gets:,}")
    table.add_row(f"AWS cost ({estimate.region})", _money(aws.total, estimate.currency))
    out.print(table)
    out.print(f"Prices as of {estimate.prices_as_of} (evalrunner/estimate/prices.json).")
    for note in estimate.notes:
        out.print(f"- {note}", markup=False)


def _print_monitor(estimate: MonitorEstimate) -> None:
    cur = estimate.currency
    table = Table(
        title=f"Monitoring: {estimate.interactions_per_day:,} interactions a day, "
        f"{estimate.sample_share:.1%} sampled, {estimate.runs_per_day:g} runs a day"
    )
    table.add_column("What")
    table.add_column("Estimate", justify="right")
    table.add_row("interactions scored per run", f"{estimate.interactions_per_run:,}")
    table.add_row("text per interaction", f"{estimate.bytes_per_interaction:,} bytes")
    table.add_row("one run: AWS", _money(estimate.run.aws.total, cur))
    judge = estimate.run.judge
    table.add_row("one run: judge", _money(judge.cost if judge else 0.0, cur))
    table.add_row("a day: judge", _money(estimate.judge_cost_per_day, cur))
    table.add_row(
        "a day: AWS (runs, monitor function, CloudWatch)", _money(estimate.aws_cost_per_day, cur)
    )
    table.add_row("a day: total", _money(estimate.total_per_day, cur))
    table.add_row("30 days: total", _money(estimate.total_per_month, cur))
    out.print(table)
    limits = Table(title="Deployed limits, one run")
    for column in ("Limit", "Needs", "Allows", ""):
        limits.add_column(column, justify="right" if column in ("Needs", "Allows") else "left")
    for check in estimate.checks:
        limits.add_row(
            escape(check.what),
            f"{check.needs:,.6g} {check.unit}",
            f"{check.limit:,.6g} {check.unit}",
            "fits" if check.fits else f"[red]does not fit[/red]: {escape(check.advice)}",
        )
    out.print(limits)
    for note in estimate.notes:
        out.print(f"- {note}", markup=False)


def estimate(
    suite: SuitesOption = None,
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
    judge: JudgeOption = None,
    judge_metric: JudgeMetricOption = None,
    iterations: Annotated[
        int | None, typer.Option(help="Times every case is run (default 1).")
    ] = None,
    perturb: PerturbOption = None,
    target: Annotated[
        list[str] | None,
        typer.Option(
            help="The run's target as JSON (only its name and kind matter: nothing is "
            "called). Default: the suite's logged answers when every case has one. With a "
            "project file: a target's name (repeatable), to estimate only those cells."
        ),
    ] = None,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the estimate as JSON.")] = False,
    monitor_per_day: Annotated[
        int | None,
        typer.Option(
            help="Estimate monitoring production instead: interactions a day (the suite's "
            "rows stand for them: their logged answers and contexts give the sizes)."
        ),
    ] = None,
    sample: Annotated[
        str,
        typer.Option(help="With --monitor-per-day: the share scored (5%, 0.05) or per run (200)."),
    ] = "100%",
    runs_per_day: Annotated[
        float, typer.Option(help="With --monitor-per-day: scheduled runs a day (24: hourly).")
    ] = 24,
    alarms: Annotated[
        int, typer.Option(help="With --monitor-per-day: pass-rate alarms (cdk.json monitor).")
    ] = 0,
    event_file: Annotated[
        Path | None,
        typer.Option(
            "--event",
            help="Estimate a run event (JSON file) over its suite (--suite, else found by its "
            "key); with redteam, Prepare's attack-writing judge calls too.",
        ),
    ] = None,
    mask_names: Annotated[
        bool,
        typer.Option(
            help="With --monitor-per-day: the monitor masks personal names (cdk.json "
            "monitor.pii.ner_model), an NER model's time per KB added."
        ),
    ] = False,
) -> None:
    """Estimate a run before it runs: case runs, judge calls and tokens (the metrics' own
    prompts, built for a sample of the suite), GPU minutes and the deployed run's AWS cost;
    with no --suite file, each cell of the project file (evalrunner.toml / .yaml) and the
    total."""
    if event_file is not None:
        try:
            result = event_estimate_for(event_file, suite[0] if suite else None)
        except EvalRunnerError as exc:
            raise _fail(exc, EXIT_INPUT) from None
        if as_json:
            out.print_json(dump_json(result.model_dump(mode="json")))
        else:
            _print(result)
        return
    try:
        project = project_file(config, suite or [])
        if project is not None:
            if monitor_per_day is not None:
                raise EventError(
                    "--monitor-per-day prices monitoring one suite of interactions: give it "
                    "with --suite FILE, not with a project file"
                )
            matrix = _project_estimate(
                project, suite or [], target or [], metric, judge, judge_metric, iterations, perturb
            )
        else:
            suite_file = (suite or [])[0]
            if target and len(target) > 1:
                raise EventError("--target: an estimate of one suite file takes one target")
            spec = _json_arg(target[0], "--target") if target else _default_target(suite_file)
            event = local_event(
                suite_file.name,
                spec,
                iterations=iterations or 1,
                metrics=metric or None,
                judge=_json_arg(judge, "--judge") if judge else None,
                judge_metrics=judge_metrics_arg(judge_metric) or None,
                perturbations=[perturbation_arg(p) for p in perturb] if perturb else None,
            )
            if monitor_per_day is not None:
                day = monitor_estimate_for(
                    event,
                    suite_file,
                    per_day=monitor_per_day,
                    sample=sample,
                    runs_per_day=runs_per_day,
                    alarms=alarms,
                    mask_names=mask_names,
                )
            else:
                result = estimate_for(event, suite_file)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    if project is not None:
        if as_json:
            out.print_json(dump_json(matrix.model_dump(mode="json")))
        else:
            _print_project(matrix)
        return
    if monitor_per_day is not None:
        if as_json:
            out.print_json(dump_json({**day.model_dump(mode="json"), "fits": day.fits}))
        else:
            _print_monitor(day)
        return
    if as_json:
        out.print_json(dump_json(result.model_dump(mode="json")))
    else:
        _print(result)


def _project_estimate(
    path: Path,
    suites: list[Path],
    targets: list[str],
    metric: list[str] | None,
    judge: str | None,
    judge_metric: list[str] | None,
    iterations: int | None,
    perturb: list[str] | None,
) -> ProjectEstimate:
    """The project's cells, the flags winning over the file as in ``evalrunner run``."""
    from evalrunner.project.cells import Overrides
    from evalrunner.project.estimate import estimate_project

    given = given_options(
        iterations=iterations,
        metrics=metric or None,
        judge=_json_arg(judge, "--judge") if judge else None,
        judge_metrics=judge_metrics_arg(judge_metric) or None,
        perturbations=[perturbation_arg(p) for p in perturb] if perturb else None,
    )
    picks = Overrides(event=given, targets=targets, suites=[str(s) for s in suites])
    return estimate_project(path, picks)


def _print_project(matrix: ProjectEstimate) -> None:
    total = matrix.total
    cur = total.currency
    table = Table(title=f"Estimate: {total.cells} cells of {escape(Path(matrix.project).name)}")
    gpu = total.gpu_minutes > 0  # a column only where a model metric needs a GPU
    columns = ["Target", "Suite", "Runs", "Judge calls", "Tokens in", "Tokens out"]
    columns += ["GPU min"] * gpu + [f"Judge {cur}", f"AWS {cur}"]
    for column in columns:
        names = column in ("Target", "Suite")  # shown whole, folded when too long
        table.add_column(
            column, justify="left" if names else "right", overflow="fold" if names else "ellipsis"
        )

    def row(target: str, suite: str, run: RunEstimate | None) -> list[str]:
        judge = run.judge if run else None
        figures = [
            f"{run.items if run else total.items:,}",
            f"{judge.calls if judge else (0 if run else total.judge_calls):,}",
            f"{judge.input_tokens if judge else (0 if run else total.judge_input_tokens):,}",
            f"{judge.output_tokens if judge else (0 if run else total.judge_output_tokens):,}",
        ]
        figures += [f"{run.gpu_minutes if run else total.gpu_minutes:g}"] * gpu
        judge_cost = (judge.cost if judge else 0.0) if run else total.judge_cost
        return [
            target,
            suite,
            *figures,
            _amount(judge_cost),
            _amount(run.aws.total if run else total.aws_cost),
        ]

    for cell in matrix.cells:
        table.add_row(*row(escape(cell.target), escape(cell.suite), cell.estimate))
    table.add_section()
    table.add_row(*row("[bold]total[/bold]", "", None))
    out.print(table)
    out.print(f"Total: {_money(total.cost, cur)} (judge + AWS).", highlight=False)
    if total.unpriced:
        out.print(
            "No price listed for the judge model of: "
            f"{', '.join(total.unpriced)} (its cost is not in the total).",
            markup=False,
        )
    first = matrix.cells[0].estimate
    out.print(f"Prices as of {first.prices_as_of} (evalrunner/estimate/prices.json).")
    notes = dict.fromkeys(n for c in matrix.cells for n in c.estimate.notes)
    for note in notes:
        out.print(f"- {note}", markup=False)


def _default_target(suite: Path) -> dict[str, Any]:
    from evalrunner.suite.readers import read_suite_file
    from evalrunner.targets._common import sanitise_name

    cases = read_suite_file(suite).cases
    if all(case.answer is not None for case in cases):
        return {"logged": sanitise_name(suite.stem, fallback="suite")}
    return dict(PLACEHOLDER_TARGET)


__all__ = ["estimate", "estimate_for", "monitor_estimate_for"]
