"""The CDK app: ``cdk.json`` runs ``.venv/bin/python -m infra.app``.

    npx cdk synth                       # the CLI pinned in package.json (npm ci); offline
    npx cdk deploy -c evalrunner='{...}'  # the whole config as JSON, or edit cdk.json

The configuration is the ``evalrunner`` context value (see ``infra/config.py``); the stack
name is the ``stack_name`` context value (default ``Evalrunner``). cdk-nag's AwsSolutions
checks run on every synth: an unacknowledged finding fails it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from evalrunner.errors import ConfigError
from infra.config import RunnerConfig, load_config
from infra.lambda_package import layer_problem
from infra.stack import REPO_ROOT, RunnerStack

CONTEXT_KEY = "evalrunner"
DEFAULT_STACK_NAME = "Evalrunner"


def cdk_json_context(path: Path = REPO_ROOT / "cdk.json") -> dict[str, Any]:
    """The context of ``cdk.json`` (what the CDK CLI passes to the app)."""
    return dict(json.loads(path.read_text("utf-8")).get("context", {}))


def dependencies_dir(config: RunnerConfig) -> Path:
    path = Path(config.lambda_dependencies_dir)
    path = path if path.is_absolute() else REPO_ROOT / path
    problem = layer_problem(path)
    if problem:
        raise ConfigError(problem)
    return path


def build_app(
    context: dict[str, Any] | None = None, *, outdir: str | None = None, nag: bool = True
) -> cdk.App:
    """The app with its stack. ``context`` None: what the CDK CLI gave (else ``cdk.json``'s,
    when run as a plain script). Raises ConfigError, with every problem, on bad config."""
    app = cdk.App(context=context, outdir=outdir)
    raw = app.node.try_get_context(CONTEXT_KEY)
    if raw is None and context is None:
        for key, value in cdk_json_context().items():
            app.node.set_context(key, value)
        raw = app.node.try_get_context(CONTEXT_KEY)
    config = load_config(raw)
    stack_name = app.node.try_get_context("stack_name") or DEFAULT_STACK_NAME
    RunnerStack(
        app,
        stack_name,
        config=config,
        lambda_dependencies=dependencies_dir(config),
        description="evalrunner: regression testing for RAG and LLM agents (infra/)",
    )
    if nag:
        cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app


def main() -> int:
    try:
        app = build_app()
    except ConfigError as exc:
        print(f"evalrunner: {exc}", file=sys.stderr)
        return 1
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
