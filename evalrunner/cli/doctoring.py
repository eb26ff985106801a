"""``evalrunner doctor --aws``: the account, judge model, quotas and targets, checked with the
user's credentials before the first deploy and the first run (:mod:`evalrunner.doctor`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalrunner.cli.common import EXIT_INPUT, EXIT_PREFLIGHT, _fail, out
from evalrunner.errors import ConfigError, EvalRunnerError

if TYPE_CHECKING:
    from evalrunner.doctor import ClientFactory

MARKS = {
    "pass": "[green]PASS[/]",
    "warn": "[yellow]WARN[/]",
    "fail": "[red]FAIL[/]",
    "skip": "SKIP",
}


def aws_clients(profile: str | None, region: str | None) -> tuple[ClientFactory, str | None]:
    """boto3 clients of the user's session (``profile``, ``region``), and its region."""
    import boto3
    from botocore.exceptions import BotoCoreError

    try:
        session = boto3.Session(profile_name=profile, region_name=region)
    except BotoCoreError as exc:  # a profile that is not configured
        raise ConfigError(f"--profile {profile!r}: {exc}") from None

    def clients(service: str, where: str | None) -> Any:
        return session.client(service, region_name=where or session.region_name)

    return clients, session.region_name


def doctor(
    aws: Annotated[
        bool,
        typer.Option(
            "--aws",
            help="Check the AWS account with your credentials (read-only calls).",
        ),
    ] = False,
    cdk_json: Annotated[Path, typer.Option("--cdk-json", help="The deployment's cdk.json.")] = Path(
        "cdk.json"
    ),
    profile: Annotated[str | None, typer.Option(help="AWS profile to use.")] = None,
    region: Annotated[str | None, typer.Option(help="AWS region (default: your config's).")] = None,
    converse: Annotated[
        bool,
        typer.Option(
            "--converse",
            help="Also make one Converse call of one output token to the judge model (costs "
            "a fraction of a cent).",
        ),
    ] = False,
    concurrency: Annotated[
        int,
        typer.Option(min=1, max=1000, help="The max_concurrency your runs use."),
    ] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the checks as JSON.")] = False,
) -> None:
    """Check what the first deploy and run need: account and region, judge model access,
    GPU and Lambda quotas, and the cdk.json targets (each line pass/fail with the fix).
    Exit code 5 when a check fails."""
    from evalrunner.doctor import Doctor, failed, load_deploy_config

    try:
        if not aws:
            raise ConfigError(
                "doctor checks the AWS account: pass --aws (it makes read-only calls with your "
                "credentials; --converse adds one one-token call to the judge model)"
            )
        config = load_deploy_config(cdk_json)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    try:
        clients, session_region = aws_clients(profile, region)
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    checks = Doctor(
        clients, config, region=session_region, converse=converse, concurrency=concurrency
    ).run()
    if as_json:
        out.print_json(data=[c.model_dump(mode="json") for c in checks])
    else:
        for check in checks:
            out.print(
                f"{MARKS[check.outcome.value]}  {check.name}: {check.detail}",
                highlight=False,
                markup=True,
                soft_wrap=True,
            )
            if check.fix:
                out.print(f"      fix: {check.fix}", highlight=False, markup=False, soft_wrap=True)
    if failed(checks):
        raise typer.Exit(EXIT_PREFLIGHT)
