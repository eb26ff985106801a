"""``evalrunner monitor SOURCE``: score what production answered since the last run, with
referenceless metrics, through the ordinary local pipeline (the ``logged`` target: nothing is
called), and move the watermark (:mod:`evalrunner.monitor`). ``evalrunner promote RUN``: the
worst interactions of a run as regression cases."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from evalrunner.cli.common import (
    DEFAULT_OUT,
    EXIT_INPUT,
    FailOnOption,
    JudgeOption,
    JudgeTimeoutOption,
    ThresholdOption,
    _fail,
    _pairs,
    check_out_dir,
    err,
    judge_arg,
    out,
)
from evalrunner.errors import EvalRunnerError, ExecutionFailed

if TYPE_CHECKING:
    from evalrunner.engine.run_types import RunResult
    from evalrunner.monitor.runner import Plan
    from evalrunner.privacy import PiiMasker


def monitor(
    source: Annotated[
        str,
        typer.Argument(
            help="The logs: a file, a folder, or an S3 prefix (s3://bucket/prefix); .gz is "
            "unpacked."
        ),
    ],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help="auto (told by each file), jsonl, csv, otel, bedrock-invocations, "
            "bedrock-agent-traces.",
        ),
    ] = "auto",
    mapping: Annotated[
        list[str] | None,
        typer.Option(
            "--map",
            help="FIELD=COLUMN for jsonl/csv: which column holds id, question, answer, "
            "contexts, steps, session or timestamp (a dotted path into a JSON record works).",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            help="The monitor's name: its watermark and reports folder (default "
            "monitor-<source's name>)."
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Take nothing older than this: 24h, 7d, or an ISO 8601 time."),
    ] = None,
    sample: Annotated[
        str | None,
        typer.Option(
            help="Score a sample of the new interactions: a count (200) or a share (0.05, 5%)."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="The sample's seed.")] = 0,
    lateness: Annotated[
        str,
        typer.Option(help="How late a record may arrive and still be scored (90s, 15m, 2h)."),
    ] = "1h",
    metric: Annotated[
        list[str] | None,
        typer.Option(
            help="Referenceless metric to score (repeatable; default: every one that "
            "needs no model, and the judge's RAG triad when a judge is configured)."
        ),
    ] = None,
    threshold: ThresholdOption = None,
    fail_on: FailOnOption = None,
    judge: JudgeOption = None,
    judge_timeout: JudgeTimeoutOption = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Reports folder; the watermark is kept there too.")
    ] = DEFAULT_OUT,
    mask_pii: Annotated[
        bool,
        typer.Option(
            "--mask-pii/--no-mask-pii",
            help="Mask e-mails, phones, cards, IBANs, IPs, SSNs and street addresses in the "
            "question, answer and contexts before any metric or judge sees them (and before "
            "the reports).",
        ),
    ] = True,
    pii: Annotated[
        str | None,
        typer.Option(
            "--pii",
            help="Masking options as JSON, as cdk.json monitor.pii: kinds, phone_regions, "
            "address_countries, ner_model, ner_labels; names: "
            '\'{"kinds": ["EMAIL", "PHONE", "PERSON"], "ner_model": "./ner-model"}\' '
            "(needs pip install 'evalrunner[ner]').",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
) -> None:
    """Score production interactions logged since the last run (each once) with
    referenceless metrics; a second run over the same logs scores nothing new (exit 0)."""
    from evalrunner.cli.run_console import report
    from evalrunner.cli.running import _execute_local, _notes, _partial_or_fail
    from evalrunner.launch import local_event
    from evalrunner.monitor.local import run_monitor
    from evalrunner.monitor.metrics import check_metrics, default_metrics
    from evalrunner.monitor.runner import MonitorOptions
    from evalrunner.monitor.sampling import parse_sample
    from evalrunner.monitor.times import duration_seconds, since_time
    from evalrunner.run_defaults import RunDefaults

    now = datetime.now(UTC)

    def show(found: Plan) -> None:
        if not as_json:
            for line in found.lines():
                err.print(escape(line), highlight=False, soft_wrap=True)

    def execute(event: dict[str, Any], suite: Path) -> RunResult:
        try:
            return _execute_local(event, suite, out_dir, quiet or as_json, preflight=False)
        except ExecutionFailed as exc:  # stopped: its partial reports, exit 3
            return _partial_or_fail(exc)

    try:
        check_out_dir(out_dir)
        masker = _masker(mask_pii, pii)  # a missing NER model fails before anything is read
        options = MonitorOptions(
            source=source,
            format=fmt,
            mapping=_mapping(mapping or []),
            name=name,
            since=since_time(since, now) if since else None,
            sample=parse_sample(sample) if sample else None,
            seed=seed,
            lateness_seconds=duration_seconds(lateness, "--lateness"),
        )
        judge_value = judge_arg(judge, judge_timeout)
        with_judge = judge_value is not None or RunDefaults.read().judge is not None
        metrics = check_metrics(metric) if metric else default_metrics(with_judge=with_judge)
        thresholds = _pairs(threshold, "--threshold") if threshold else None

        def event_for(suite_name: str, monitor_name: str) -> dict[str, Any]:
            return local_event(
                suite_name,
                {"logged": monitor_name},
                iterations=1,
                metrics=metrics,
                thresholds=thresholds,
                judge=judge_value,
                fail_on=fail_on.value if fail_on else None,
            )

        outcome = run_monitor(options, out_dir, event_for, execute, mask_pii=masker, on_plan=show)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    result = outcome.result
    if result is None:
        message = outcome.message or ""
        if as_json:
            out.print_json(json.dumps(_plan_json(outcome.plan, scored=0, message=message)))
        else:
            err.print(escape(message), highlight=False)
        raise typer.Exit(0)
    code = report(result, as_json=as_json)
    notices = list(result.notices)
    if result.summary.partial:
        notices.append(
            "the run was stopped: the interactions it did not score stay new, so the next "
            "monitor run scores them"
        )
    _notes(notices)
    raise typer.Exit(code)


def _mapping(pairs: list[str]) -> dict[str, str]:
    from evalrunner.monitor.model import MonitorError

    found = {}
    for pair in pairs:
        field, sep, column = pair.partition("=")
        if not sep or not field.strip() or not column.strip():
            raise MonitorError(f"--map {pair!r}: give FIELD=COLUMN, e.g. --map question=prompt")
        found[field.strip()] = column.strip()
    return found


def _plan_json(found: Plan, *, scored: int, message: str) -> dict[str, object]:
    return {
        "monitor": found.name,
        "message": message,
        "found": found.found,
        "new": len(found.new),
        "scored": scored,
        "duplicates": found.duplicates,
        "too_late": found.too_late,
        "before_since": found.before_since,
        "pending": found.pending,
        "problems": [p.text() for p in found.problems],
    }


def promote(
    run: Annotated[
        str,
        typer.Argument(
            help="The run: its run id (looked up under --out), its report.json / "
            "summary.json, or its report folder test-reports/<target> (the newest run there)."
        ),
    ],
    to: Annotated[Path, typer.Option("--to", help="The suite to write: .xlsx or .jsonl.")],
    worst: Annotated[
        int, typer.Option(help="How many of the worst failing cases to promote.")
    ] = 10,
    include_passing: Annotated[
        bool,
        typer.Option(
            "--include-passing",
            help="When fewer than --worst cases failed, fill the rest with the passing cases "
            "closest to a threshold (by default only failing cases are promoted).",
        ),
    ] = False,
    out_dir: Annotated[
        Path, typer.Option("--out", help="Reports folder holding the run.")
    ] = DEFAULT_OUT,
) -> None:
    """Write a run's worst failing interactions as regression cases: the question, and the
    answer as a candidate expected answer flagged for review (never as the expected answer)."""
    from evalrunner.monitor.promote import worst_cases, write_suite

    try:
        chosen = worst_cases(run, out_dir, worst, include_passing=include_passing)
        if not chosen.cases and chosen.scored and not chosen.failing:
            err.print(
                f"no case failed in run {escape(chosen.run_id)} ({chosen.scored} scored): "
                f"nothing promoted, {escape(str(to))} not written (--include-passing promotes "
                "the passing cases closest to a threshold)",
                highlight=False,
                soft_wrap=True,
            )
            return
        write_suite(chosen.cases, to)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    if chosen.failing < worst and not include_passing:
        err.print(
            f"only {chosen.failing} of the {chosen.scored} scored case(s) failed, fewer than "
            f"--worst {worst}: only those are promoted (--include-passing adds the passing "
            "cases closest to a threshold)",
            highlight=False,
            soft_wrap=True,
        )
    err.print(
        f"{len(chosen.cases)} case(s) promoted to {escape(str(to))}: review each "
        "candidate_expected_answer and move it to expected_answer before the suite gates a "
        "release",
        highlight=False,
        soft_wrap=True,
    )


def _masker(mask_pii: bool, pii: str | None) -> bool | PiiMasker:
    """``--pii`` options (JSON) made into the masker, or the on/off switch alone."""
    from evalrunner.errors import ConfigError
    from evalrunner.privacy import PiiMasker, pii_options

    if pii is None:
        return mask_pii
    if not mask_pii:
        raise ConfigError(
            "--pii gives masking options and --no-mask-pii turns masking off: give one"
        )
    try:
        raw = json.loads(pii)
    except ValueError:
        raise ConfigError(
            f"--pii: not JSON ({pii[:80]!r}); give an object such as "
            '{"kinds": ["EMAIL", "PERSON"], "ner_model": "./ner-model"}'
        ) from None
    if not isinstance(raw, dict):
        raise ConfigError("--pii: give a JSON object (kinds, phone_regions, ner_model, ...)")
    return PiiMasker(pii_options(raw))
