"""The commands that help write the input: ``validate`` (an event), ``schema`` (the event's
and the project file's JSON Schemas), ``template`` (the suite workbook) and ``metrics`` (the
evaluators to choose from)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from evalrunner.cli.common import EXIT_INPUT, _fail, _json_arg, err, out
from evalrunner.errors import EvalRunnerError, EventError

if TYPE_CHECKING:
    from evalrunner.event import RunEvent


def validate(
    event_file: Annotated[
        Path, typer.Argument(help="Event JSON file, or a project file (.toml, .yaml, .yml).")
    ],
) -> None:
    """Check an event against the contract, or a project file and each of its cells; exit 0
    when valid."""
    from evalrunner.event import concurrency_cap, parse_event

    try:
        if not event_file.is_file():
            raise EventError(f"{event_file} does not exist")
        if event_file.suffix.lower() in (".toml", ".yaml", ".yml"):
            _validate_project(event_file)
            return
        # the deployment's cap, when this shell has it (README: Lambda concurrency)
        parsed = parse_event(
            _json_arg(str(event_file), str(event_file)), concurrency_cap=concurrency_cap()
        )
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    out.print(
        f"[green]valid[/]: {parsed.target_kind} target, {parsed.iterations} iteration(s), "
        f"metrics: {escape(', '.join(parsed.metrics))}",
        highlight=False,
    )
    warn_about_defaults(parsed)


def _validate_project(path: Path) -> None:
    """A project file: its keys, and every cell's event as a run would check it."""
    from evalrunner.event import parse_event
    from evalrunner.project.cells import load_project

    project = load_project(path)
    out.print(
        f"[green]valid[/]: {escape(path.name)}, {len(project.cells)} cells "
        f"({len(project.model.targets)} targets × {len(project.model.suites)} suites)",
        highlight=False,
    )
    warn_about_defaults(parse_event(project.cells[0].event))


def warn_about_defaults(parsed: RunEvent) -> None:
    """Say, before a run, which judge metrics would be skipped for want of a judge and what
    a run that named no metric left out of the default set: never a silent skip."""
    from evalrunner.event import (
        concurrency_notice,
        judge_metrics_without_judge,
        left_out_by_default,
    )
    from evalrunner.judge.lifecycle import legacy_judge_warning
    from evalrunner.run_defaults import ENV_JUDGE

    unjudged = judge_metrics_without_judge(parsed)
    if unjudged:
        err.print(
            f"[yellow]warning[/]: {escape(', '.join(unjudged))} need an LLM judge and none is "
            f"configured (event 'judge', cdk.json 'judge' deployed, {ENV_JUDGE} or the config "
            "file locally): every case would be skipped for these metrics",
            highlight=False,
            markup=True,
        )
    for notice in (legacy_judge_warning(parsed.judge), concurrency_notice(parsed)):
        if notice:
            err.print(f"[yellow]warning[/]: {escape(notice)}", highlight=False)
    left_out = left_out_by_default(parsed)
    if left_out:
        err.print(f"[dim]{escape(left_out_line(left_out))}[/]", highlight=False)


def left_out_line(left_out: list[str]) -> str:
    """What a run that named no metric left out, as one line: a count, why, and where to
    look (``evalrunner metrics``), instead of one line per metric before every run.
    ``left_out``: ``"<metric>: <why>"`` per metric, as ``left_out_by_default`` gives them."""
    judge = sum("no judge is configured" in line for line in left_out)
    reasons = [f"{judge} need --judge"] if judge else []
    if len(left_out) > judge:
        reasons.append(f"{len(left_out) - judge} need --metric")
    return f"{len(left_out)} metrics not run ({', '.join(reasons)}); see 'evalrunner metrics'"


def schema(
    name: Annotated[
        str, typer.Argument(help="Which schema: event, or project (evalrunner.toml / .yaml).")
    ] = "event",
) -> None:
    """Print a JSON Schema shipped with evalrunner (e.g. evalrunner schema project >
    evalrunner.schema.json, for editor completion of the project file)."""
    if name == "project":
        from evalrunner.project.schema import shipped

        sys.stdout.write(shipped())
        return
    from evalrunner.event import event_schema

    if name != "event":
        err.print(f"[red]error:[/] unknown schema {escape(repr(name))}; available: event, project")
        raise typer.Exit(EXIT_INPUT)
    sys.stdout.write(json.dumps(event_schema(), indent=2) + "\n")


def template(
    path: Annotated[Path, typer.Argument(help="Where to write the .xlsx template.")],
) -> None:
    """Write the suite template: a data sheet with headers and validation, and instructions."""
    from evalrunner.suite.template import write_template

    if path.suffix.lower() != ".xlsx":
        err.print(
            f"[red]error:[/] {escape(str(path))}: the template is an .xlsx file; name it e.g. "
            "suite.xlsx"
        )
        raise typer.Exit(EXIT_INPUT)
    write_template(path)
    out.print(f"wrote {path}", markup=False)


def list_perturbations() -> None:
    """List the perturbators for --perturb / the event's perturbations, with an example."""
    from evalrunner.perturb import KINDS, PerturbationSpec, perturb_text

    example = "How many days of annual leave do full-time employees get per year?"
    table = Table(title=f"perturbations (example, seed 0: {example})")
    for col in ("Kind", "Intensity: share of", "Default", "Does", "Example"):
        table.add_column(col)
    for kind, p in KINDS.items():
        spec = PerturbationSpec(kind=kind, intensity=p.default_intensity)
        table.add_row(
            kind,
            p.unit,
            f"{p.default_intensity:g}",
            p.description,
            "(rewritten by the run's judge)"
            if p.needs_judge
            else perturb_text(example, spec, "example"),
        )
    out.print(table)


def list_metrics(
    plugin: Annotated[
        list[str] | None,
        typer.Option(help="Module (name or .py file) of your own metrics to list too."),
    ] = None,
) -> None:
    """List the evaluators of this release with their metrics and default thresholds."""
    from evalrunner.evaluators import available, plugins
    from evalrunner.models import default_model

    try:  # an installed entry point or a named module that does not import is bad input
        plugins.load(plugins.normalize(p) for p in plugin or [])
        catalog = available()
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None

    table = Table(title="evaluators")
    for col in ("Evaluator", "Needs", "Metrics (primary first)", "Threshold"):
        table.add_column(col, overflow="fold")  # a model's long name wraps, never "…"
    for name, cls in catalog.items():
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
