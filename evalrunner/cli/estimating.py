"""``evalrunner estimate``: what a run of a suite would cost, before it runs (judge calls and
tokens, GPU minutes, the AWS cost of the run deployed). Nothing is called or started."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from evalrunner.cli.common import (
    EXIT_INPUT,
    JudgeMetricOption,
    JudgeOption,
    _fail,
    _json_arg,
    judge_metrics_arg,
    out,
)
from evalrunner.cli.running import PerturbOption, perturbation_arg
from evalrunner.errors import EvalRunnerError, EventError
from evalrunner.jsonout import dump_json
from evalrunner.launch import local_event

if TYPE_CHECKING:  # pydantic models: imported when the command runs, not for --help
    from evalrunner.estimate.model import RunEstimate

#: The target of an estimate that names none and whose suite has no logged answers: the
#: estimate calls no target, so only its name would show.
PLACEHOLDER_TARGET: dict[str, Any] = {"lambdaArn": "target-to-estimate"}


def estimate_for(event: dict[str, Any], suite: Path) -> RunEstimate:
    """The estimate of ``event`` over the suite file, validated as a run would be."""
    from evalrunner.estimate.compute import estimate_run
    from evalrunner.event import parse_event
    from evalrunner.pipeline.prepare import expand, settle
    from evalrunner.suite.readers import read_suite_file

    cases = read_suite_file(suite)
    settled = settle(parse_event(event), cases)
    return estimate_run(settled, cases, expand(cases, settled.iterations, settled.perturbations))


def _money(value: float | None, currency: str) -> str:
    return "no price listed" if value is None else f"{value:,.4f} {currency}"


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


def estimate(
    suite: Annotated[Path, typer.Option(help="Suite file: .xlsx, .csv or .json.")],
    metric: Annotated[list[str] | None, typer.Option(help="Evaluator to run (repeatable).")] = None,
    judge: JudgeOption = None,
    judge_metric: JudgeMetricOption = None,
    iterations: Annotated[int, typer.Option(help="Times every case is run.")] = 1,
    perturb: PerturbOption = None,
    target: Annotated[
        str | None,
        typer.Option(
            help="The run's target as JSON (only its name and kind matter: nothing is "
            "called). Default: the suite's logged answers when every case has one."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the estimate as JSON.")] = False,
) -> None:
    """Estimate a run before it runs: case runs, judge calls and tokens (the metrics' own
    prompts, built for a sample of the suite), GPU minutes and the deployed run's AWS cost."""
    try:
        if not suite.is_file():
            raise EventError(f"--suite: {suite} does not exist or is not a file")
        spec = _json_arg(target, "--target") if target else _default_target(suite)
        event = local_event(
            suite.name,
            spec,
            iterations=iterations,
            metrics=metric or None,
            judge=_json_arg(judge, "--judge") if judge else None,
            judge_metrics=judge_metrics_arg(judge_metric) or None,
            perturbations=[perturbation_arg(p) for p in perturb] if perturb else None,
        )
        result = estimate_for(event, suite)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    if as_json:
        out.print_json(dump_json(result.model_dump(mode="json")))
    else:
        _print(result)


def _default_target(suite: Path) -> dict[str, Any]:
    from evalrunner.suite.readers import read_suite_file
    from evalrunner.targets._common import sanitise_name

    cases = read_suite_file(suite).cases
    if all(case.answer is not None for case in cases):
        return {"logged": sanitise_name(suite.stem, fallback="suite")}
    return dict(PLACEHOLDER_TARGET)


__all__ = ["estimate", "estimate_for"]
