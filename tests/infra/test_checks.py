"""cdk-nag (AwsSolutions) and cfn-lint on the synthesised templates."""

from __future__ import annotations

import json

import pytest

STACKS = ["Evalrunner", "EvalrunnerWildcard"]


def test_cdk_nag_has_no_unacknowledged_finding(synth):
    """The session's synthesis ran AwsSolutionsChecks as a policy-validation plugin: it would
    have raised on any finding not acknowledged next to its resource."""
    report = synth.outdir / "validation-report.json"
    if report.exists():  # written when a plugin reports; then it must have no violation
        plugins = json.loads(report.read_text())["pluginReports"]
        violations = [v for p in plugins for v in p["violations"]]
        assert violations == [], json.dumps(violations, indent=1)


def test_every_acknowledgment_has_a_reason(synth, capsys):
    """Each acknowledged finding is an AwsSolutions rule, justified next to its resource."""
    acknowledged = [a for a in _acknowledgments(synth) if a[1].startswith("AwsSolutions")]
    assert acknowledged, "no acknowledgment found: are the cdk-nag checks wired?"
    for path, rule, reason in acknowledged:
        assert rule.startswith("AwsSolutions-"), (path, rule)
        assert len(reason) > 40, (path, rule, reason)
    with capsys.disabled():
        rules = sorted({rule for _, rule, _ in acknowledged})
        print(f"\n[infra] {len(acknowledged)} cdk-nag acknowledgments, {len(rules)} rules")


def _acknowledgments(synth) -> list[tuple[str, str, str]]:
    """(construct path, rule, reason) recorded by ``Validations.of(x).acknowledge``."""
    out = []
    for stack in synth.stacks.values():
        for construct in stack.node.find_all():
            for entry in construct.node.metadata:
                if entry.type == "aws:cdk:acknowledged-rules":
                    for rule, reason in entry.data.items():
                        out.append((construct.node.path, rule.split("::", 1)[-1], reason))
    return out


@pytest.mark.parametrize("acknowledged", [False, True])
def test_cdk_nag_really_checks_and_acknowledgments_really_count(tmp_path, acknowledged):
    """Controls: the plugin fails a bucket without access logs, unless acknowledged the way
    the stack acknowledges (infra.parts.common.acknowledge)."""
    import aws_cdk as cdk
    from aws_cdk import aws_s3 as s3
    from cdk_nag import AwsSolutionsChecks

    from infra.parts.common import acknowledge as _acknowledge

    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Control")
    bucket = s3.Bucket(stack, "Plain", enforce_ssl=True)
    if acknowledged:
        _acknowledge(bucket, "AwsSolutions-S1", "a control bucket for this test only")
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    if acknowledged:
        app.synth()
        return
    with pytest.raises(Exception, match="ValidationFailed"):
        app.synth()
    report = json.loads((tmp_path / "validation-report.json").read_text())
    rules = {v["ruleName"] for p in report["pluginReports"] for v in p["violations"]}
    assert rules == {"AwsSolutions-S1"}


@pytest.mark.parametrize("name", STACKS)
def test_cfn_lint_clean(synth, name, tmp_path):
    """cfn-lint's defaults (errors and warnings), in two regions."""
    from cfnlint.api import ManualArgs, lint_file

    path = tmp_path / f"{name}.template.json"
    path.write_text(json.dumps(synth.templates[name], indent=1), "utf-8")
    matches = lint_file(path, config=ManualArgs(regions=["us-east-1", "eu-west-1"]))
    assert [str(m) for m in matches] == []


def test_acknowledged_wildcards_are_the_expected_ones(synth):
    """Every IAM5 acknowledgment names a finding that exists, nothing blanket."""
    for path, rule, _ in _acknowledgments(synth):
        if rule.startswith("AwsSolutions-IAM5"):
            assert "[" in rule and rule.endswith("]"), (path, rule)


@pytest.mark.parametrize("name", STACKS)
def test_asl_validator_clean(synth, name, tmp_path):
    """The pinned asl-validator (package.json; ``npm ci``) on the definition CloudFormation
    will hold: the ASL file with the stack's substitutions (ARNs as placeholder-shaped
    values where they are CloudFormation references)."""
    import shutil
    import subprocess
    from pathlib import Path

    import state_machines

    validator = Path(__file__).parents[2] / "node_modules" / ".bin" / "asl-validator"
    assert validator.is_file(), "run `npm ci` (make test does): asl-validator is pinned there"
    assert shutil.which("node"), "asl-validator needs Node.js (22, README, Deploy)"
    machines = synth.resources(name, "AWS::StepFunctions::StateMachine")
    # the test runner and the workflow (infra/parts/workflow.py)
    assert sorted(k.rstrip("0123456789ABCDEF") for k in machines) == [
        "TestRunner",
        "WorkflowStateMachine",
    ]
    fake = {
        "PrepareFunctionArn": "arn:aws:lambda:us-east-1:111122223333:function:prepare",
        "RunCaseFunctionArn": "arn:aws:lambda:us-east-1:111122223333:function:run-case",
        "ScoreFunctionArn": "arn:aws:lambda:us-east-1:111122223333:function:score",
        "AggregateFunctionArn": "arn:aws:lambda:us-east-1:111122223333:function:aggregate",
        "BatchJobQueueArn": "arn:aws:batch:us-east-1:111122223333:job-queue/gpu",
        "BatchJobDefinitionArn": "arn:aws:batch:us-east-1:111122223333:job-definition/gpu:1",
        "WorkflowFunctionArn": "arn:aws:lambda:us-east-1:111122223333:function:workflow",
    }
    for logical_id, sm in machines.items():
        subs = sm["Properties"]["DefinitionSubstitutions"]
        values = {k: v if isinstance(v, str) else fake[k] for k, v in subs.items()}
        path = tmp_path / f"{name}-{logical_id}.asl.json"
        path.write_text(
            state_machines.substitute(sm["Properties"]["DefinitionString"], values, tuple(values))
        )
        done = subprocess.run(
            [str(validator), "--json-path", str(path)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "is valid" in done.stdout
