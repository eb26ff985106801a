"""The ``evalrunner`` command. Exit codes: 0 success, 1 a gate failed (or a regression with
--fail-on-regression), 2 bad input (nothing started), 3 the run itself failed, 4 the run
finished but no target call succeeded (nothing was measured), 5 the pre-flight failed (the
target or judge could not be used; nothing was run or spent).

The commands live in modules named for what they do (:mod:`.running`, :mod:`.leaderboards`,
:mod:`.inputs`); they are registered here, in the order ``--help`` lists them."""

from __future__ import annotations

from typing import Annotated

import typer

from evalrunner import __version__
from evalrunner.cli.calibrating import calibrate
from evalrunner.cli.common import (
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_NO_ANSWER,
    EXIT_PREFLIGHT,
    EXIT_RUN,
    _pairs,
    app,
    check_out_dir,
    out,
)
from evalrunner.cli.doctoring import doctor
from evalrunner.cli.estimating import estimate
from evalrunner.cli.generating import generate
from evalrunner.cli.history import history
from evalrunner.cli.inputs import list_metrics, list_perturbations, schema, template, validate
from evalrunner.cli.leaderboards import leaderboard
from evalrunner.cli.monitoring import monitor, promote
from evalrunner.cli.redteaming import redteam
from evalrunner.cli.rescoring import rescore
from evalrunner.cli.running import demo, run, start
from evalrunner.cli.viewing import view
from evalrunner.cli.workflowing import workflow
from evalrunner.gc_freeze import held_until_exit
from evalrunner.launch import judge_cache_dir

__all__ = [
    "EXIT_GATE",
    "EXIT_INPUT",
    "EXIT_NO_ANSWER",
    "EXIT_PREFLIGHT",
    "EXIT_RUN",
    "_pairs",
    "app",
    "check_out_dir",
    "judge_cache_dir",
    "main",
]


def _print_version(value: bool) -> None:
    if value:
        out.print(f"evalrunner {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print evalrunner's version and exit.",
        ),
    ] = False,
) -> None:
    """The options before a command (``evalrunner --version``); the help text is the app's."""


app.command()(run)
app.command()(leaderboard)
app.command()(demo)
app.command()(start)
app.command()(rescore)
app.command()(estimate)
app.command()(history)
app.command()(monitor)
app.command()(promote)
app.command()(validate)
app.command()(schema)
app.command()(template)
app.command("metrics")(list_metrics)
app.command("perturbations")(list_perturbations)
app.command()(generate)
app.command()(calibrate)
app.command()(redteam)
app.command()(workflow)
app.command()(doctor)
app.command()(view)


def main() -> None:
    """The ``evalrunner`` command. Its process ends with the command, so the run's heap is
    not handed back to the cyclic collector at the end (:func:`held_until_exit`: a full
    collection of it, then the interpreter's at exit, were seconds of the tail after the last
    answer, issue 31)."""
    with held_until_exit():
        app()
