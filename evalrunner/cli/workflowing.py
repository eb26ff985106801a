"""``evalrunner workflow``: generate → evaluate → robustness → red team → calibrate → weak
spots → artifacts in one folder, each step once (see :mod:`evalrunner.workflow`). Exit 0
when every step passed, 1 when one found a failure, 2 for bad input, 3 when a step could not
run (rerun the command to resume there), 5 when a pre-flight probe failed."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from evalrunner.cli.common import (
    EXIT_GATE,
    EXIT_INPUT,
    EXIT_PREFLIGHT,
    EXIT_RUN,
    FailOnOption,
    JudgeOption,
    JudgeTimeoutOption,
    NoPreflight,
    RedteamPluginsOption,
    RedteamStrategiesOption,
    ThresholdOption,
    _fail,
    _json_arg,
    _pairs,
    err,
    judge_arg,
    out,
)
from evalrunner.errors import ConfigError, EvalRunnerError, EventError, SuiteError


def _csv(value: str | None) -> list[str] | None:
    return [v.strip() for v in value.split(",") if v.strip()] if value else None


def _event_settings(path: Path, out_dir: Path) -> tuple[dict[str, Any], Path]:
    """The workflow event at ``path`` as the runner's settings (its keys as paths under the
    event file's folder, which stands for the bucket), and the folder it runs in (the
    default ``--out`` gets the event's workflow_id, as the bucket's ``workflows/<id>/``)."""
    from evalrunner.workflow.event import load_workflow_event, local_config, parse_workflow_event

    parsed = parse_workflow_event(load_workflow_event(path))
    settings = local_config(parsed, path.parent).model_dump(mode="json", exclude_unset=True)
    if out_dir == Path("evalrunner-workflow"):
        out_dir = out_dir / parsed.workflow_id
    return settings, out_dir


def _deployed(
    event: Path | None, out_dir: Path, bucket: str | None, arn: str | None, as_json: bool
) -> None:
    """``--aws``: the event file on the deployed workflow (its other fields as written)."""
    from evalrunner.workflow.event import load_workflow_event, parse_workflow_event
    from evalrunner.workflow.remote import start_workflow_remote

    try:
        if event is None:
            raise ConfigError("--aws runs a workflow event: give --event FILE")
        if not bucket or not arn:
            raise ConfigError(
                "--aws needs --bucket and --workflow-state-machine-arn (or EVALRUNNER_BUCKET "
                "and EVALRUNNER_WORKFLOW_STATE_MACHINE_ARN): the stack outputs BucketName and "
                "WorkflowStateMachineArn"
            )
        raw = load_workflow_event(event)
        parsed = parse_workflow_event(raw)  # refused here, before anything is uploaded
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    folder = out_dir / parsed.workflow_id if out_dir == Path("evalrunner-workflow") else out_dir
    try:
        done = start_workflow_remote(
            raw, root=event.parent, bucket=bucket, state_machine_arn=arn, out_dir=folder
        )
    except EvalRunnerError as exc:
        err.print(f"the workflow stopped; its folder is copied to {folder}")
        raise _fail(exc, EXIT_RUN) from None
    verdict = str(done.output.get("verdict"))
    if as_json:
        out.print_json(data=done.output)
    else:
        out.print(f"workflow {verdict}: {folder / 'workflow-report.html'}", markup=False)
    raise typer.Exit(0 if verdict == "passed" else EXIT_GATE)


def workflow(
    target: Annotated[
        str | None,
        typer.Option(help="The target as JSON (or a file), as for evalrunner run --target."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(help="A workflow file (JSON): the same fields; options given here win."),
    ] = None,
    event: Annotated[
        Path | None,
        typer.Option(
            help="A workflow event (JSON), the deployed workflow state machine's input: its "
            "documents, suite and labels keys are read relative to the event file's folder; "
            "--out defaults to evalrunner-workflow/WORKFLOW_ID. Options given here win."
        ),
    ] = None,
    documents: Annotated[
        str | None,
        typer.Option(help="Documents to generate the suite from (folder or s3://bucket/prefix/)."),
    ] = None,
    suite: Annotated[
        str | None, typer.Option(help="A suite file to evaluate instead of generating one.")
    ] = None,
    steps: Annotated[
        str | None,
        typer.Option(
            help="Comma-separated steps to run: generate, evaluate, robustness, redteam, "
            "calibrate, weak-spots, artifacts. Default: all. Finished steps are not repeated."
        ),
    ] = None,
    count: Annotated[
        list[str] | None,
        typer.Option(help="Generated cases KIND=N, as for generate --count (repeatable)."),
    ] = None,
    metric: Annotated[
        list[str] | None, typer.Option(help="A metric by name (repeatable), as for run.")
    ] = None,
    threshold: ThresholdOption = None,
    perturb: Annotated[
        list[str] | None,
        typer.Option(
            help="The robustness step's perturbations, KIND[:INTENSITY[:SEED]] (repeatable); "
            "default typos:0.1 and synonym."
        ),
    ] = None,
    purpose: Annotated[
        str | None, typer.Option(help="What the target is for (red team); default: inferred.")
    ] = None,
    plugins: RedteamPluginsOption = None,
    strategies: RedteamStrategiesOption = None,
    num_tests: Annotated[int | None, typer.Option(help="Attacks per plugin.", min=1)] = None,
    seed: Annotated[int | None, typer.Option(help="The red team's seed.", min=0)] = None,
    labels: Annotated[
        str | None,
        typer.Option(
            help="Human verdicts for the calibrate step (csv/xlsx: case_id, human_verdict)."
        ),
    ] = None,
    judge: JudgeOption = None,
    judge_timeout: JudgeTimeoutOption = None,
    out_dir: Annotated[
        Path, typer.Option("--out", help="The workflow folder (resumed when it holds one).")
    ] = Path("evalrunner-workflow"),
    fail_on: FailOnOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the workflow report as JSON.")
    ] = False,
    no_preflight: NoPreflight = False,
    aws: Annotated[
        bool,
        typer.Option(
            "--aws",
            help="With --event: run it on the deployed workflow state machine (inputs under "
            "the event file's folder are uploaded to their keys; the workflow's folder is "
            "copied into --out).",
        ),
    ] = False,
    bucket: Annotated[
        str | None, typer.Option(envvar="EVALRUNNER_BUCKET", help="Runner bucket (with --aws).")
    ] = None,
    workflow_state_machine_arn: Annotated[
        str | None,
        typer.Option(
            envvar="EVALRUNNER_WORKFLOW_STATE_MACHINE_ARN",
            help="The deployed workflow state machine (stack output WorkflowStateMachineArn; "
            "with --aws).",
        ),
    ] = None,
) -> None:
    """Chain generate, evaluate, robustness, red team, calibrate and weak spots; write a
    workflow report, a corpus patch, a system-prompt extension and a Bedrock guardrail."""
    from evalrunner.cli.common import perturbation_arg
    from evalrunner.cli.generating import _counts
    from evalrunner.preflight import PreflightFailed
    from evalrunner.workflow.api import workflow_config
    from evalrunner.workflow.config import load_config, parse_steps
    from evalrunner.workflow.runner import execute

    if aws:
        _deployed(event, out_dir, bucket, workflow_state_machine_arn, as_json)
    try:
        settings: dict[str, Any] = load_config(config) if config is not None else {}
        if event is not None:
            if config is not None:
                raise ConfigError("--event and --config: give one of them")
            settings, out_dir = _event_settings(event, out_dir)
        red: dict[str, Any] = dict(settings.get("redteam") or {})
        red.update(
            {
                k: v
                for k, v in {
                    "purpose": purpose,
                    "plugins": _csv(plugins),
                    "strategies": _csv(strategies),
                    "num_tests": num_tests,
                    "seed": seed,
                }.items()
                if v is not None
            }
        )
        spec = _json_arg(target, "--target") if target else None
        if spec is None and "target" not in settings:
            raise ConfigError(
                '--target is required (or "target" in --config), e.g. '
                '--target \'{"url": "http://localhost:8080/ask"}\''
            )
        cfg, runnable = workflow_config(
            spec,
            settings,
            judge=judge_arg(judge, judge_timeout),
            documents=documents,
            suite=suite,
            counts=_counts(count) or None,
            metrics=metric or None,
            thresholds=_pairs(threshold, "--threshold") or None,
            perturbations=[perturbation_arg(p) for p in perturb] if perturb else None,
            labels=labels,
            fail_on=fail_on.value if fail_on else None,
            redteam=red or None,
            preflight=False if no_preflight else None,
        )
        chosen = parse_steps(steps)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    try:
        result = execute(
            cfg,
            out_dir,
            target=runnable,
            steps=chosen,
            on_step=None
            if as_json
            else lambda r: err.print(
                f"{r.step.value}: {r.status} ({r.verdict or '-'}) {escape(r.headline or '')}",
                highlight=False,
            ),
        )
    except PreflightFailed as exc:
        raise _fail(exc, EXIT_PREFLIGHT) from None
    except (ConfigError, SuiteError, EventError) as exc:
        err.print(f"the workflow stopped; fix this and rerun to resume (folder {out_dir})")
        raise _fail(exc, EXIT_INPUT) from None
    except EvalRunnerError as exc:
        err.print(f"the workflow stopped; rerun the command to resume (folder {out_dir})")
        raise _fail(exc, EXIT_RUN) from None
    if as_json:
        out.print_json(result.report_json.read_text("utf-8"))
    else:
        for step in result.reused:
            err.print(f"{step.value}: finished earlier with the same inputs; not run again")
        out.print(f"workflow {result.verdict}: {result.report_html}", markup=False, soft_wrap=True)
    raise typer.Exit(0 if result.passed else EXIT_GATE)
