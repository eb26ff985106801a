"""``evalrunner history``: a target's trend page (``history.html`` / ``history.json``),
rebuilt from the runs in a local ``--out`` folder or in the bucket. Aggregate refreshes the
same page after every run; this command is for a folder or bucket filled before that, or to
rebuild it on demand."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalrunner.cli.common import DEFAULT_OUT, EXIT_INPUT, _fail, out
from evalrunner.errors import ConfigError, EvalRunnerError


def history(
    target: Annotated[
        str, typer.Option(help="Target name, as in test-reports/<target>/ (e.g. the summary's).")
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", help="Local reports folder holding the runs.")
    ] = DEFAULT_OUT,
    bucket: Annotated[
        str | None,
        typer.Option(help="Read the runs from this bucket, and write the page there."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print history.json.")] = False,
) -> None:
    """Write a target's history: every primary metric over time with its threshold,
    regressions marked, pass rate per run, links to each run's report."""
    from evalrunner.reports.writers.history import history_keys, local_history, refresh_history
    from evalrunner.storage import REPORTS_PREFIX  # boto3: imported when the command runs

    try:
        if "/" in target or target in ("", ".", ".."):
            raise ConfigError(f"--target {target!r}: a target name, not a path")
        if bucket:
            import boto3

            from evalrunner.storage import RunStore

            built = refresh_history(RunStore(bucket, client=boto3.client("s3")), target)
            where = [f"s3://{bucket}/{key}" for key in history_keys(target)]
        else:
            folder = out_dir / REPORTS_PREFIX / target
            if not folder.is_dir():
                known = sorted(p.name for p in (out_dir / REPORTS_PREFIX).glob("*") if p.is_dir())
                raise ConfigError(
                    f"--target {target!r}: no runs in {folder}; targets under "
                    f"{out_dir / REPORTS_PREFIX}: {', '.join(known) or 'none'}"
                )
            paths = local_history(out_dir, target)
            built = None
            where = [str(p) for p in paths]
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    if as_json:
        text = built.model_dump_json() if built else Path(where[0]).read_text("utf-8")
        out.print_json(text)
        return
    for path in where:
        out.print(path, highlight=False, markup=False)


__all__ = ["history"]
