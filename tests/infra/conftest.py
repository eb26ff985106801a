"""The app is synthesised ONCE per test session (jsii start-up and synthesis take seconds):
one App, two stacks, cdk-nag's AwsSolutions checks on, no credentials, no Docker, no network.

- ``Evalrunner``: ``cdk.json``'s configuration plus a target of every kind, two schedules,
  upload defaults, an alarm e-mail, Marketplace product ids and a production monitor, so every
  conditional part of the stack is present;
- ``EvalrunnerWildcard``: the ``allow_all_targets`` opt-in, with GPU Batch scoring disabled.
"""

from __future__ import annotations

import copy
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Node 20 is end-of-life for jsii: said once per process on stderr; not news for every run.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

ACCOUNT = "111122223333"
TARGETS = {
    "lambda_arns": [f"arn:aws:lambda:eu-west-1:{ACCOUNT}:function:hr-assistant"],
    "state_machine_arns": [f"arn:aws:states:eu-west-1:{ACCOUNT}:stateMachine:rag-flow"],
    "agent_aliases": [{"agent_id": "AGENT12345", "alias_id": "ALIAS12345"}],
    "knowledge_bases": [{"knowledge_base_id": "KB12345678", "region": "us-west-2"}],
    "model_arns": [
        "arn:aws:bedrock:us-west-2::foundation-model/anthropic.claude-3-haiku-20240307-v1:0"
    ],
    "guardrail_arns": [f"arn:aws:bedrock:us-west-2:{ACCOUNT}:guardrail/gr1abcdefgh2"],
}
SECRETS = [
    f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:qa/assistant-token-AbC123",
    f"arn:aws:secretsmanager:eu-west-1:{ACCOUNT}:secret:judge-key-XyZ789",
]
#: AWS Marketplace product ids of the judge model (a made-up id of the documented shape).
MARKETPLACE_PRODUCTS = ["prod-abcdefgh12345"]
NETWORK = {
    "allow_internal_addresses": True,
    "allowed_url_prefixes": ["https://assistant.example.com/"],
}
SCHEDULES = [
    {
        "name": "nightly-hr",
        "expression": "cron(0 3 * * ? *)",
        "timezone": "Europe/Berlin",
        "key": "test-suites/hr.xlsx",
        "target": {"lambdaArn": TARGETS["lambda_arns"][0]},
        "iterations": 2,
        "event": {"metrics": ["Rouge Metric"], "fail_under": {"Rouge Metric": 0.3}},
    },
    {
        "name": "weekly-agent",
        "expression": "rate(7 days)",
        "key": "test-suites/agent.csv",
        "target": {"agentId": "AGENT12345", "agentAliasId": "ALIAS12345"},
        "iterations": 1,
        "enabled": False,
    },
]


#: The monitor of production traffic, with every option that adds a resource (a KMS source
#: key, alarms on two metrics).
KEY_ID = "1234abcd-12ab-34cd-56ef-1234567890ab"
MONITOR = {
    "name": "prod-hr",
    "source": "s3://hr-assistant-logs/AWSLogs/bedrock/",
    "source_kms_key_arn": f"arn:aws:kms:eu-west-1:{ACCOUNT}:key/{KEY_ID}",
    "large_bodies": "s3://hr-assistant-logs/bedrock-large/",
    "schedule": "rate(1 hour)",
    "event": {"sample": "5%", "metrics": ["Faithfulness", "Answer Relevancy"]},
    "pii": {"phone_regions": ["US", "GB"]},
    "alarms": {"metrics": ["Faithfulness", "Answer Relevancy"], "band": 2.5},
    "retention_days": 30,
}


def config_for(context: dict[str, Any], deps: Path, **overrides: Any) -> dict[str, Any]:
    config = copy.deepcopy(context["evalrunner"])
    config.update(lambda_dependencies_dir=str(deps), **overrides)
    return config


@dataclass
class Synth:
    """What one synthesis produced."""

    outdir: Path
    stacks: dict[str, Any]  # name -> RunnerStack
    templates: dict[str, dict[str, Any]]  # name -> template JSON
    configs: dict[str, Any]  # name -> RunnerConfig
    seconds: float

    def template(self, name: str = "Evalrunner"):
        from aws_cdk.assertions import Template

        return Template.from_json(self.templates[name])

    def resources(self, name: str, type_: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.templates[name]["Resources"].items() if r["Type"] == type_}

    def runner_machine(self, name: str) -> tuple[str, dict[str, Any]]:
        """The test-runner state machine (logical id, resource); the stack also holds the
        workflow's (``infra/parts/workflow.py``)."""
        (found,) = [
            (k, r)
            for k, r in self.resources(name, "AWS::StepFunctions::StateMachine").items()
            if k.startswith("TestRunner")
        ]
        return found


@pytest.fixture(scope="session")
def fake_dependencies(tmp_path_factory) -> Path:
    """Stands in for ``make lambda-package``'s output (tests need no PyPI)."""
    from infra.lambda_package import MANIFEST, lambda_requirements, manifest_text

    deps = tmp_path_factory.mktemp("lambda-deps")
    (deps / "python").mkdir()
    (deps / "python" / "README").write_text("dependencies layer stand-in\n")
    (deps / MANIFEST).write_text(manifest_text(lambda_requirements()), "utf-8")
    return deps


@pytest.fixture(scope="session")
def synth(tmp_path_factory, fake_dependencies) -> Synth:
    started = time.perf_counter()
    from infra.app import build_app, cdk_json_context
    from infra.config import load_config
    from infra.stack import RunnerStack

    context = cdk_json_context()
    context["evalrunner"] = config_for(
        context,
        fake_dependencies,
        targets=TARGETS,
        schedules=SCHEDULES,
        upload_defaults={"target": {"url": "https://assistant.example.com/ask"}, "iterations": 2},
        alarm_email="rag-team@example.com",
        secrets=SECRETS,
        network=NETWORK,
        marketplace_product_ids=MARKETPLACE_PRODUCTS,
        monitor=MONITOR,
    )
    outdir = tmp_path_factory.mktemp("cdk.out")
    app = build_app(context, outdir=str(outdir))
    wildcard = load_config(
        config_for(
            context,
            fake_dependencies,
            allow_all_targets=True,
            batch_scoring={"enabled": False},
            marketplace_product_ids=[],
            monitor=None,
        )
    )
    RunnerStack(app, "EvalrunnerWildcard", config=wildcard, lambda_dependencies=fake_dependencies)
    assembly = app.synth()  # raises if cdk-nag reports an unacknowledged finding
    stacks = {c.node.id: c for c in app.node.children if isinstance(c, RunnerStack)}
    templates = {s.stack_name: s.template for s in assembly.stacks}
    return Synth(
        outdir=outdir,
        stacks=stacks,
        templates=templates,
        configs={name: stack.config for name, stack in stacks.items()},
        seconds=time.perf_counter() - started,
    )


def statements(template: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(policy logical id, statement) for every identity-policy statement of the template."""
    out = []
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::IAM::Policy":
            for statement in resource["Properties"]["PolicyDocument"]["Statement"]:
                out.append((logical_id, statement))
    return out


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)
