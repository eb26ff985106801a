"""``evalrunner view``: the runs under a folder or bucket prefix in the browser."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from evalrunner.cli.common import EXIT_INPUT, _fail, out
from evalrunner.errors import EvalRunnerError


def view(
    where: Annotated[
        str,
        typer.Argument(
            help="The --out folder of your runs (it holds test-reports/), or "
            "s3://bucket/prefix of the deployed runner's bucket (your AWS credentials).",
        ),
    ] = "evalrunner-out",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free port).")
    ] = 8765,
    browser: Annotated[
        bool, typer.Option("--browser/--no-browser", help="Open the browser on the viewer.")
    ] = True,
) -> None:
    """Browse, filter, compare and label runs in the browser (served on 127.0.0.1 only).

    Runs: every run with its verdict, pass rates and gates, filters and trends. A run: its
    verdict and problems, then its cases (filter, sort, search). A case: the answer coloured
    by context support, every metric's score and reason, steps, turns, variants. Compare two
    runs, a leaderboard of several targets, labels for calibrate, a ZIP export."""
    try:
        from evalrunner.viewer.server import serve
        from evalrunner.viewer.source import open_source
    except ImportError as exc:
        out.print(
            f"[red]the viewer needs its extra: pip install 'evalrunner[view]' ({escape(str(exc))})"
        )
        raise typer.Exit(EXIT_INPUT) from None
    try:
        source = open_source(where)
        serve(
            source,
            port=port,
            open_browser=browser,
            announce=lambda url: out.print(
                f"evalrunner viewer: {escape(source.label)} at {url} (Ctrl-C stops it)",
                highlight=False,
            ),
        )
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
