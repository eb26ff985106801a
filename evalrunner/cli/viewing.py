"""``evalrunner view``: the runs under a folder or bucket prefix in the browser."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from evalrunner.cli.common import DEFAULT_OUT, EXIT_INPUT, _fail, out
from evalrunner.errors import ConfigError, EvalRunnerError

if TYPE_CHECKING:
    from evalrunner.viewer.server import BackgroundViewer

VIEW_EXTRA = "the viewer needs its extra: pip install 'evalrunner[view]'"


def open_viewer(out_dir: Path, suites: Sequence[Path] = ()) -> BackgroundViewer:
    """``evalrunner run --view``: the viewer on ``out_dir`` from a thread of this process,
    the browser opened on it (the run is listed under "In progress" as it goes, each finished
    case with its question from ``suites``, the suite files being run)."""
    try:
        from evalrunner.viewer.live import SuiteQuestions
        from evalrunner.viewer.server import BackgroundViewer
        from evalrunner.viewer.source import LocalSource
    except ImportError as exc:
        raise ConfigError(f"--view: {VIEW_EXTRA} ({exc})") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    viewer = BackgroundViewer(LocalSource(out_dir), questions=SuiteQuestions(suites))
    out.print(f"evalrunner viewer: {viewer.url} (the run appears as its cases finish)")
    return viewer


def view(
    where: Annotated[
        str,
        typer.Argument(
            help="The --out folder of your runs (it holds test-reports/), or "
            "s3://bucket/prefix of the deployed runner's bucket (your AWS credentials).",
        ),
    ] = str(DEFAULT_OUT),
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
        out.print(f"[red]{VIEW_EXTRA} ({escape(str(exc))})")
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
