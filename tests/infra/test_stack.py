"""What is in the synthesised template: resources and the properties that matter."""

from __future__ import annotations

import importlib
import json
import re

import pytest
from aws_cdk.assertions import Match

import state_machines
from evalrunner.event import parse_event
from evalrunner.workflow.event import MAX_SCRATCH_BYTES, SCRATCH_MIB

from .conftest import (
    MARKETPLACE_PRODUCTS,
    NETWORK,
    SCHEDULES,
    SECRETS,
    TARGETS,
    as_list,
    dump,
    statements,
)

MAIN = "Evalrunner"
WILDCARD = "EvalrunnerWildcard"


def test_synthesis_time_is_reported(synth, capsys):
    with capsys.disabled():
        print(
            f"\n[infra] app built and synthesised once (2 stacks, cdk-nag on) in "
            f"{synth.seconds:.1f}s"
        )
    assert set(synth.templates) == {MAIN, WILDCARD}


# ---------------------------------------------------------------------------- the bucket


def test_runner_bucket(synth):
    t = synth.template()
    t.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                ]
            },
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "VersioningConfiguration": {"Status": "Enabled"},
            "NotificationConfiguration": {"EventBridgeConfiguration": {"EventBridgeEnabled": True}},
            "LoggingConfiguration": {"DestinationBucketName": Match.any_value()},
            "LifecycleConfiguration": {
                "Rules": Match.array_with(
                    [
                        Match.object_like(
                            {"Prefix": "runs/", "ExpirationInDays": 30, "Status": "Enabled"}
                        )
                    ]
                )
            },
        },
    )
    # Both buckets refuse plain HTTP.
    policies = synth.resources(MAIN, "AWS::S3::BucketPolicy")
    assert len(policies) == 2
    for policy in policies.values():
        denies = [
            s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"
        ]
        assert any(s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in denies)
    # No custom resource (e.g. the L2's bucket-notifications Lambda) sneaks in.
    assert not [r for r in synth.templates[MAIN]["Resources"].values() if "Custom::" in r["Type"]]


# ---------------------------------------------------------------------------- functions


def test_five_functions_python312_traced_with_powertools(synth):
    """The pipeline's five, the workflow's, and the production monitor's (cdk.json
    monitor)."""
    functions = synth.resources(MAIN, "AWS::Lambda::Function")
    handlers = sorted(f["Properties"]["Handler"] for f in functions.values())
    assert handlers == [
        "lambdas.aggregate.handler",
        "lambdas.monitor.handler",
        "lambdas.prepare.handler",
        "lambdas.run_case.handler",
        "lambdas.score.handler",
        "lambdas.start_from_upload.handler",
        "lambdas.workflow.handler",
    ]
    layer = next(iter(synth.resources(MAIN, "AWS::Lambda::LayerVersion")))
    for fn in functions.values():
        props = fn["Properties"]
        assert props["Runtime"] == "python3.12"
        assert props["TracingConfig"] == {"Mode": "Active"}
        assert props["Layers"] == [{"Ref": layer}]
        env = props["Environment"]["Variables"]
        assert env["POWERTOOLS_SERVICE_NAME"] == "evalrunner"
        assert env["POWERTOOLS_LOG_LEVEL"] == "INFO"
        assert env["EVALRUNNER_BUCKET"] == {"Ref": _bucket_id(synth)}
        assert "LoggingConfig" in props  # its own log group, with retention
        module, attr = props["Handler"].rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), attr))


def test_function_environments(synth):
    functions = synth.resources(MAIN, "AWS::Lambda::Function").values()
    env = {
        f["Properties"]["Handler"]: f["Properties"]["Environment"]["Variables"] for f in functions
    }
    topic = next(iter(synth.resources(MAIN, "AWS::SNS::Topic")))
    assert env["lambdas.aggregate.handler"]["EVALRUNNER_TOPIC_ARN"] == {"Ref": topic}
    upload = env["lambdas.start_from_upload.handler"]
    assert "stateMachine:Evalrunner-test-runner" in dump(upload["EVALRUNNER_STATE_MACHINE_ARN"])
    assert json.loads(upload["EVALRUNNER_DEFAULT_TARGET"]) == {
        "url": "https://assistant.example.com/ask"
    }
    assert upload["EVALRUNNER_DEFAULT_ITERATIONS"] == "2"


def test_code_asset_is_the_core_library_without_torch(synth):
    """The functions' code: evalrunner/, lambdas/, state_machines/ and nothing else."""
    fn = next(iter(synth.resources(MAIN, "AWS::Lambda::Function").values()))
    key = fn["Properties"]["Code"]["S3Key"]
    asset = synth.outdir / f"asset.{key.removesuffix('.zip')}"
    assert sorted(p.name for p in asset.iterdir()) == ["evalrunner", "lambdas", "state_machines"]
    files = [p.relative_to(asset).as_posix() for p in asset.rglob("*") if p.is_file()]
    assert "lambdas/start_from_upload.py" in files and "evalrunner/upload.py" in files
    assert "state_machines/test_runner.asl.json" in files
    assert "evalrunner/schemas/event.schema.json" in files
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    assert not [f for f in files if re.search(r"(^|/)(torch|tests|\.venv)/", f)]


# ---------------------------------------------------------------------------- state machine


def test_state_machine_is_the_asl_file_with_every_placeholder_substituted(synth):
    _, sm = synth.runner_machine(MAIN)
    props = sm["Properties"]
    definition = props["DefinitionString"]
    assert definition == state_machines.test_runner_asl()
    used = set(re.findall(r"\$\{([A-Za-z0-9]+)\}", definition))
    assert used == set(state_machines.PLACEHOLDERS)
    assert set(props["DefinitionSubstitutions"]) == set(state_machines.PLACEHOLDERS)
    subs = props["DefinitionSubstitutions"]
    ids = synth.templates[MAIN]["Resources"]
    for placeholder, handler in [
        ("PrepareFunctionArn", "lambdas.prepare.handler"),
        ("RunCaseFunctionArn", "lambdas.run_case.handler"),
        ("ScoreFunctionArn", "lambdas.score.handler"),
        ("AggregateFunctionArn", "lambdas.aggregate.handler"),
    ]:
        logical = subs[placeholder]["Fn::GetAtt"][0]
        assert ids[logical]["Properties"]["Handler"] == handler
    assert subs["ChildExecutionType"] == "STANDARD"
    assert subs["BatchScoringEnabled"] == "true"
    assert subs["BatchScoringMinItems"] == "1"
    queue = subs["BatchJobQueueArn"]["Fn::GetAtt"][0]
    assert ids[queue]["Type"] == "AWS::Batch::JobQueue"
    assert ids[subs["BatchJobDefinitionArn"]["Ref"]]["Type"] == "AWS::Batch::JobDefinition"
    assert props["StateMachineName"] == "Evalrunner-test-runner"
    assert props["TracingConfiguration"] == {"Enabled": True}
    assert props["LoggingConfiguration"]["Level"] == "ALL"


def test_the_workflow_state_machine_invokes_only_its_function_which_starts_the_runner(synth):
    """The workflow (infra/parts/workflow.py): its ASL file with the workflow function
    substituted; its role may invoke that function only; the function is told which state
    machine to start (the test runner), and the stack says where to start a workflow."""
    resources = synth.templates[MAIN]["Resources"]
    (logical, machine), *others = [
        (k, r)
        for k, r in synth.resources(MAIN, "AWS::StepFunctions::StateMachine").items()
        if k.startswith("WorkflowStateMachine")
    ]
    assert not others
    props = machine["Properties"]
    assert props["DefinitionString"] == state_machines.workflow_asl()
    assert set(props["DefinitionSubstitutions"]) == set(state_machines.WORKFLOW_PLACEHOLDERS)
    function = props["DefinitionSubstitutions"]["WorkflowFunctionArn"]["Fn::GetAtt"][0]
    assert resources[function]["Properties"]["Handler"] == "lambdas.workflow.handler"
    assert resources[function]["Properties"]["Timeout"] == 900
    # its /tmp holds each task's copy of the workflow (every run's report set): sized for it,
    # and the copy limit the tasks refuse beyond leaves half of it for what a task writes
    assert resources[function]["Properties"]["EphemeralStorage"] == {"Size": SCRATCH_MIB}
    assert MAX_SCRATCH_BYTES * 2 == SCRATCH_MIB * 2**20
    assert all(
        "EphemeralStorage" not in r["Properties"]
        for k, r in synth.resources(MAIN, "AWS::Lambda::Function").items()
        if r["Properties"].get("Handler") != "lambdas.workflow.handler"
    )
    assert props["StateMachineName"] == "Evalrunner-workflow"
    assert props["TracingConfiguration"] == {"Enabled": True}
    role = props["RoleArn"]["Fn::GetAtt"][0]
    granted = [
        statement
        for policy, statement in statements(synth.templates[MAIN])
        if {"Ref": role} in resources[policy]["Properties"]["Roles"]
        and not str(statement["Action"]).startswith(("logs:", "['logs:", "xray:", "['xray:"))
    ]
    assert granted == [
        {
            "Action": "lambda:InvokeFunction",
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [function, "Arn"]},
            "Sid": "InvokeWorkflowFunction",
        }
    ]
    env = resources[function]["Properties"]["Environment"]["Variables"]
    assert "Evalrunner-test-runner" in json.dumps(env["EVALRUNNER_STATE_MACHINE_ARN"])
    outputs = synth.templates[MAIN]["Outputs"]
    assert outputs["WorkflowStateMachineArn"]["Value"] == {"Ref": logical}
    # a failed workflow alarms on the topic, as a failed run does
    (alarm,) = [
        a["Properties"]
        for k, a in synth.resources(MAIN, "AWS::CloudWatch::Alarm").items()
        if k.startswith("WorkflowsFailedAlarm")
    ]
    watched = {
        (m["MetricStat"]["Metric"]["MetricName"], dump(m["MetricStat"]["Metric"]["Dimensions"]))
        for m in alarm["Metrics"]
        if "MetricStat" in m
    }
    assert {name for name, _ in watched} == {
        "ExecutionsFailed",
        "ExecutionsTimedOut",
        "ExecutionsAborted",
    }
    assert all(logical in dimensions for _, dimensions in watched)


def test_substituted_definition_routes_large_runs_to_batch(synth):
    """The definition CloudFormation will hold, with the placeholders filled in."""
    _, sm = synth.runner_machine(MAIN)
    values = {p: "SUB" for p in state_machines.PLACEHOLDERS}
    values.update(
        BatchScoringEnabled="true", BatchScoringMinItems="200", BatchScoringTimeoutSeconds="9000"
    )
    states = json.loads(state_machines.substitute(sm["Properties"]["DefinitionString"], values))[
        "States"
    ]
    plan = states["ScoringPlan"]["Parameters"]
    assert plan == {
        "batch.$": "States.StringToJson('true')",
        "min_items.$": "States.StringToJson('200')",
        "timeout_seconds.$": "States.StringToJson('9000')",
    }
    (rule,) = states["ChooseScoring"]["Choices"]
    assert rule["Next"] == "ScoreOnBatch" and states["ChooseScoring"]["Default"] == "Score"
    batch = states["ScoreOnBatch"]
    assert batch["Resource"] == "arn:aws:states:::batch:submitJob.sync"
    env = {
        e["Name"]: e["Value.$"] for e in batch["Parameters"]["ContainerOverrides"]["Environment"]
    }
    assert env == {"EVALRUNNER_RUN_ID": "$.run_id", "EVALRUNNER_BUCKET": "$.bucket"}
    assert batch["Catch"][0]["Next"] == "Aggregate" and states["Score"]["Next"] == "Aggregate"
    # a job that cannot start does not hold the run: the step is bounded
    assert batch["TimeoutSecondsPath"] == "$.scoring.timeout_seconds"
    assert batch["Catch"][0]["ErrorEquals"] == ["States.ALL"]


def test_score_on_batch_waits_at_most_the_queue_limit_plus_the_job_timeout(synth):
    """ScoreOnBatch's bound is substituted from cdk.json: every attempt may wait
    queue_timeout_minutes RUNNABLE and run timeout_minutes, plus ten minutes."""
    _, sm = synth.runner_machine(MAIN)
    subs = sm["Properties"]["DefinitionSubstitutions"]
    assert subs["BatchScoringTimeoutSeconds"] == str(2 * (30 + 120) * 60 + 600)
    (job,) = synth.resources(MAIN, "AWS::Batch::JobDefinition").values()
    assert job["Properties"]["RetryStrategy"]["Attempts"] == 2
    assert job["Properties"]["Timeout"] == {"AttemptDurationSeconds": 120 * 60}


# ---------------------------------------------------------------------------- IAM

#: Actions with no resource-level permissions: '*' is the only possible resource.
NO_RESOURCE_TYPE = {
    "cloudwatch:PutMetricData",  # scoped by its cloudwatch:namespace condition
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "logs:CreateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:DescribeLogGroups",
    "logs:DescribeResourcePolicies",
    "logs:GetLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:UpdateLogDelivery",
    "batch:DescribeJobs",
    "batch:TerminateJob",
    "ecr:GetAuthorizationToken",
    "bedrock:RetrieveAndGenerate",
    # AWS Marketplace subscriptions have no ARN (Subscribe is scoped by a ProductId condition)
    "aws-marketplace:Subscribe",
    "aws-marketplace:ViewSubscriptions",
}
#: Actions that reach a target (the system under test).
TARGET_ACTIONS = {
    "lambda:InvokeFunction",
    "states:StartExecution",
    "states:StartSyncExecution",
    "states:DescribeStateMachine",
    "states:DescribeExecution",
    "states:StopExecution",
    "bedrock:InvokeAgent",
    "bedrock:Retrieve",
    "bedrock:InvokeModel",
    "bedrock:InvokeModelWithResponseStream",
}


def test_no_wildcard_resource_without_the_opt_in(synth):
    for policy, statement in statements(synth.templates[MAIN]):
        actions = set(as_list(statement["Action"]))
        assert not any(a.endswith(":*") or a == "*" for a in actions), (policy, statement)
        if "*" in as_list(statement["Resource"]):
            assert actions <= NO_RESOURCE_TYPE, (policy, statement)


def test_target_actions_are_scoped_to_the_configured_targets(synth):
    resources = synth.templates[MAIN]["Resources"]
    pipeline = {k for k, r in resources.items() if r["Type"] in ("AWS::Lambda::Function",)}
    allowed = {
        *TARGETS["lambda_arns"],
        *TARGETS["state_machine_arns"],
        "arn:aws:states:eu-west-1:111122223333:execution:rag-flow:*",
        *TARGETS["model_arns"],
    }
    seen: dict[str, set[str]] = {}
    for policy, statement in statements(synth.templates[MAIN]):
        for action in set(as_list(statement["Action"])) & TARGET_ACTIONS:
            for resource in as_list(statement["Resource"]):
                text = dump(resource)
                seen.setdefault(action, set()).add(text)
                if isinstance(resource, str):
                    assert resource in allowed, (policy, action, resource)
                elif "Fn::GetAtt" in resource:  # the pipeline's own functions
                    assert resource["Fn::GetAtt"][0] in pipeline, (policy, action, resource)
                else:  # built with the stack's partition/region/account
                    assert re.search(
                        r"agent-alias/AGENT12345/ALIAS12345|knowledge-base/KB12345678|"
                        r"stateMachine:Evalrunner-test-runner|execution:Evalrunner-test-runner[:/]\*|"
                        # the workflow follows the runs it starts (infra/parts/workflow.py)
                        r"execution:Evalrunner-workflow:\*|"
                        r"(foundation-model|inference-profile)/(us\.)?anthropic\.claude",  # judge
                        text,
                    ), (policy, action, resource)
    assert any("agent-alias/AGENT12345/ALIAS12345" in r for r in seen["bedrock:InvokeAgent"])
    kb = [r for r in seen["bedrock:Retrieve"] if "knowledge-base/KB12345678" in r]
    assert kb and "us-west-2" in kb[0]
    assert dump(TARGETS["lambda_arns"][0]) in seen["lambda:InvokeFunction"]


def test_knowledge_base_guardrails_are_applied_only_as_listed(synth):
    grants = [
        s
        for _, s in statements(synth.templates[MAIN])
        if "bedrock:ApplyGuardrail" in as_list(s["Action"])
    ]
    assert [(s["Sid"], as_list(s["Resource"])) for s in grants] == [
        ("ApplyKnowledgeBaseGuardrails", TARGETS["guardrail_arns"])
    ]
    (opt_in,) = [
        s for _, s in statements(synth.templates[WILDCARD]) if s.get("Sid") == "AllTargetsOptIn"
    ]
    assert "bedrock:ApplyGuardrail" in opt_in["Action"]


def test_only_the_run_case_role_calls_targets(synth):
    resources = synth.templates[MAIN]["Resources"]
    run_case_role = next(
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"] == "lambdas.run_case.handler"
    )
    for policy, statement in statements(synth.templates[MAIN]):
        if "bedrock:InvokeAgent" in as_list(statement["Action"]):
            roles = resources[policy]["Properties"]["Roles"]
            assert roles == [{"Ref": run_case_role}]
    outputs = synth.templates[MAIN]["Outputs"]
    assert outputs["RunnerRoleArn"]["Value"] == {"Fn::GetAtt": [run_case_role, "Arn"]}


def test_functions_get_the_deployed_policies_from_cdk_json(synth):
    """Every function knows it is deployed: the secrets it may read and the network policy
    come from cdk.json, and the core parses them (evalrunner.secrets / evalrunner.network)."""
    from evalrunner import network, secrets

    functions = synth.resources(MAIN, "AWS::Lambda::Function").values()
    assert len(functions) == 7  # the pipeline's five, the workflow's and the monitor
    for fn in functions:
        env = fn["Properties"]["Environment"]["Variables"]
        policy = secrets.current_policy({secrets.ENV_POLICY: env[secrets.ENV_POLICY]})
        assert policy.deployed and policy.allowed_secrets == SECRETS
        net = network.current_policy({network.ENV_POLICY: env[network.ENV_POLICY]})
        assert net.enforce and net.model_dump(exclude={"enforce"}) == NETWORK


def test_only_the_run_case_role_reads_exactly_the_listed_secrets(synth):
    resources = synth.templates[MAIN]["Resources"]
    run_case_role = next(
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"] == "lambdas.run_case.handler"
    )
    reads = [
        (p, s)
        for p, s in statements(synth.templates[MAIN])
        if any(a.startswith("secretsmanager:") for a in as_list(s["Action"]))
    ]
    assert [s["Action"] for _, s in reads] == ["secretsmanager:GetSecretValue"]
    policy, statement = reads[0]
    assert sorted(as_list(statement["Resource"])) == sorted(SECRETS)
    assert resources[policy]["Properties"]["Roles"] == [{"Ref": run_case_role}]
    wildcard = [
        s for _, s in statements(synth.templates[WILDCARD]) if "secretsmanager" in dump(s["Action"])
    ]
    # allow_all_targets opens targets, not secrets: still exactly the listed ARNs
    assert [sorted(as_list(s["Resource"])) for s in wildcard] == [sorted(SECRETS)]


def test_allow_all_targets_is_the_only_way_to_wildcards(synth):
    opt_in = [
        s for _, s in statements(synth.templates[WILDCARD]) if s.get("Sid") == "AllTargetsOptIn"
    ]
    assert len(opt_in) == 1 and opt_in[0]["Resource"] == "*"
    assert "lambda:InvokeFunction" in opt_in[0]["Action"]
    assert not [
        s for _, s in statements(synth.templates[MAIN]) if s.get("Sid") == "AllTargetsOptIn"
    ]


def test_bucket_access_is_by_prefix(synth):
    """Each role reaches only its prefixes of the runner bucket."""
    bucket = _bucket_id(synth)
    by_role: dict[str, set[tuple[str, str]]] = {}
    resources = synth.templates[MAIN]["Resources"]
    for policy, statement in statements(synth.templates[MAIN]):
        role = resources[policy]["Properties"]["Roles"][0]["Ref"]
        if statement.get("Sid") in ("ReadLogSource", "ListLogSource", "ReadLargeBodies"):
            continue  # the monitor's log source and its bodies stored apart: other buckets
            # (tests/infra/test_monitor_stack.py)
        for action in as_list(statement["Action"]):
            if not action.startswith("s3:"):
                continue
            for resource in as_list(statement["Resource"]):
                text = dump(resource)
                assert bucket in text, (policy, statement)
                prefix = re.search(r'"/([a-z_/-]*)\*"', text)
                by_role.setdefault(role, set()).add((action, prefix.group(1) if prefix else ""))
    upload = next(v for k, v in by_role.items() if k.startswith("StartFromUploadRole"))
    assert upload == {
        ("s3:GetObject", "test-suites/"),
        ("s3:GetObjectTagging", "test-suites/"),
        ("s3:PutObject", "test-reports/_rejected/"),
        ("s3:DeleteObject", "test-reports/_rejected/"),
        ("s3:ListBucket", ""),
    }
    # The roles that judge read and write the judge's cache, judge-cache/, and no other role.
    cache = {("s3:GetObject", "judge-cache/"), ("s3:PutObject", "judge-cache/")}
    run_case = next(v for k, v in by_role.items() if k.startswith("RunCaseRole"))
    assert run_case == {
        ("s3:GetObject", "runs/"),
        ("s3:PutObject", "runs/"),
        ("s3:ListBucket", ""),
        *cache,
    }
    prepare = next(v for k, v in by_role.items() if k.startswith("PrepareRole"))
    assert cache <= prepare
    monitor = next(v for k, v in by_role.items() if k.startswith("MonitorRole"))
    assert monitor == {
        ("s3:GetObject", "monitor/"),
        ("s3:PutObject", "monitor/"),
        ("s3:GetObject", "test-suites/_monitor/prod-hr/"),
        ("s3:PutObject", "test-suites/_monitor/prod-hr/"),
        ("s3:ListBucket", ""),
    }
    # the workflow (infra/parts/workflow.py): its inputs, its state, the runs' suites and
    # reports, and the judge's cache (its judge writes the suite, the attacks, the artifacts)
    workflow = next(v for k, v in by_role.items() if k.startswith("WorkflowRole"))
    assert workflow == {
        ("s3:GetObject", "workflow-inputs/"),
        ("s3:GetObject", "workflows/"),
        ("s3:PutObject", "workflows/"),
        ("s3:GetObject", "test-reports/"),
        ("s3:PutObject", "test-suites/_workflow/"),
        ("s3:ListBucket", ""),
        *cache,
    }
    for role, grants in by_role.items():
        if not role.startswith(("RunCaseRole", "PrepareRole", "WorkflowRole")):
            assert not {prefix for _, prefix in grants} & {"judge-cache/"}, role


# ---------------------------------------------------------------------------- GPU Batch


def test_gpu_batch_scoring(synth):
    t = synth.template()
    t.has_resource_properties(
        "AWS::Batch::ComputeEnvironment",
        {
            "Type": "managed",
            "ComputeResources": Match.object_like(
                {
                    "MinvCpus": 0,
                    "MaxvCpus": 16,
                    "InstanceTypes": ["g5.xlarge", "g4dn.xlarge"],
                    "Ec2Configuration": [{"ImageType": "ECS_AL2023_NVIDIA"}],
                }
            ),
        },
    )
    t.resource_count_is("AWS::Batch::JobQueue", 1)
    # A job that cannot start (no G-instance quota, no capacity) is cancelled, not kept
    # RUNNABLE for ever: every reason Batch reports, after cdk.json's queue_timeout_minutes.
    (queue,) = synth.resources(MAIN, "AWS::Batch::JobQueue").values()
    actions = queue["Properties"]["JobStateTimeLimitActions"]
    assert {a["Reason"] for a in actions} == {
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        "MISCONFIGURATION:COMPUTE_ENVIRONMENT_MAX_RESOURCE",
        "MISCONFIGURATION:JOB_RESOURCE_REQUIREMENT",
    }
    for action in actions:
        assert action["Action"] == "CANCEL" and action["State"] == "RUNNABLE"
        assert action["MaxTimeSeconds"] == 30 * 60
    (job,) = synth.resources(MAIN, "AWS::Batch::JobDefinition").values()
    container = job["Properties"]["ContainerProperties"]
    requirements = {r["Type"]: r["Value"] for r in container["ResourceRequirements"]}
    assert requirements["GPU"] == "1"
    assert "container-assets" in container["Image"]["Fn::Sub"]
    env = {e["Name"]: e["Value"] for e in container["Environment"]}
    assert env["EVALRUNNER_BUCKET"] == {"Ref": _bucket_id(synth)}
    assert env["AWS_DEFAULT_REGION"] == {"Ref": "AWS::Region"}


def test_gpu_image_is_staged_not_built(synth):
    manifest = json.loads((synth.outdir / f"{MAIN}.assets.json").read_text())
    (image,) = manifest["dockerImages"].values()
    assert image["source"]["dockerFile"] == "gpu_tasks/Dockerfile"
    staged = synth.outdir / image["source"]["directory"]
    names = sorted(p.name for p in staged.iterdir())
    assert names == [
        "README.md",
        "evalrunner",
        "gpu_tasks",
        "lambdas",
        "pyproject.toml",
        "state_machines",
    ]
    assert (staged / "gpu_tasks" / "score_entrypoint.py").is_file()


def test_batch_disabled_deploys_no_batch_and_scores_in_process(synth):
    resources = synth.templates[WILDCARD]["Resources"].values()
    assert not [r for r in resources if r["Type"].startswith(("AWS::Batch::", "AWS::EC2::"))]
    _, sm = synth.runner_machine(WILDCARD)
    subs = sm["Properties"]["DefinitionSubstitutions"]
    assert set(subs) == set(state_machines.PLACEHOLDERS)
    assert subs["BatchScoringEnabled"] == "false"
    assert not synth.templates[WILDCARD]["Resources"].keys() & {"SchedulerRole"}


# ---------------------------------------------------------------------------- starting runs


def test_upload_trigger_rule(synth):
    (rule,) = synth.resources(MAIN, "AWS::Events::Rule").values()
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["source"] == ["aws.s3"] and pattern["detail-type"] == ["Object Created"]
    assert pattern["detail"]["bucket"]["name"] == [{"Ref": _bucket_id(synth)}]
    wildcards = {m["wildcard"] for m in pattern["detail"]["object"]["key"]}
    for ext in ("xlsx", "csv", "json"):
        assert f"test-suites/*.{ext}" in wildcards
    (target,) = rule["Properties"]["Targets"]
    upload = target["Arn"]["Fn::GetAtt"][0]
    resources = synth.templates[MAIN]["Resources"]
    assert resources[upload]["Properties"]["Handler"] == "lambdas.start_from_upload.handler"
    synth.template().has_resource_properties(
        "AWS::Lambda::Permission",
        {"Principal": "events.amazonaws.com", "FunctionName": {"Fn::GetAtt": [upload, "Arn"]}},
    )


def test_schedules_start_the_state_machine_with_valid_events(synth):
    schedules = {
        k: s
        for k, s in synth.resources(MAIN, "AWS::Scheduler::Schedule").items()
        if not k.startswith("MonitorSchedule")  # tests/infra/test_monitor_stack.py
    }
    assert len(schedules) == len(SCHEDULES)
    sm_id, _ = synth.runner_machine(MAIN)
    by_expression = {
        s["Properties"]["ScheduleExpression"]: s["Properties"] for s in schedules.values()
    }
    for declared in SCHEDULES:
        props = by_expression[declared["expression"]]
        assert props["Target"]["Arn"] == {"Ref": sm_id}
        event = json.loads(props["Target"]["Input"])
        assert event["key"] == declared["key"] and event["iterations"] == declared["iterations"]
        parse_event(event)
        assert props["State"] == ("ENABLED" if declared.get("enabled", True) else "DISABLED")
        assert props["ScheduleExpressionTimezone"] == declared.get("timezone", "UTC")
    role = next(iter(schedules.values()))["Properties"]["Target"]["RoleArn"]["Fn::GetAtt"][0]
    policies = [
        s
        for p, s in statements(synth.templates[MAIN])
        if synth.templates[MAIN]["Resources"][p]["Properties"]["Roles"] == [{"Ref": role}]
    ]
    assert [s["Action"] for s in policies] == ["states:StartExecution"]
    assert "stateMachine:Evalrunner-test-runner" in dump(policies[0]["Resource"])


# ---------------------------------------------------------------------------- telling people


def test_topic_alarm_and_dashboard(synth):
    t = synth.template()
    (topic,) = synth.resources(MAIN, "AWS::SNS::Topic")
    key = next(iter(synth.resources(MAIN, "AWS::KMS::Key")))
    t.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": [key, "Arn"]}})
    t.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})
    t.has_resource_properties(
        "AWS::SNS::Subscription", {"Protocol": "email", "Endpoint": "rag-team@example.com"}
    )
    alarms = synth.resources(MAIN, "AWS::CloudWatch::Alarm").values()
    failed = next(
        a["Properties"]
        for a in alarms
        if "Metrics" in a["Properties"] and "ThresholdMetricId" not in a["Properties"]
    )
    names = {
        m["MetricStat"]["Metric"]["MetricName"] for m in failed["Metrics"] if "MetricStat" in m
    }
    assert names == {"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionsAborted"}
    for alarm in alarms:
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic}]
    (dashboard,) = synth.resources(MAIN, "AWS::CloudWatch::Dashboard").values()
    body = dump(dashboard["Properties"]["DashboardBody"])
    for needle in ("ExecutionsStarted", "ExecutionTime", "ExecutionsFailed", "PassRate"):
        assert needle in body
    assert 'Namespace=\\\\\\"evalrunner\\\\\\"' in body or "evalrunner" in body


def test_outputs_for_evalrunner_start(synth):
    outputs = synth.templates[MAIN]["Outputs"]
    assert {"BucketName", "StateMachineArn", "RunnerRoleArn", "TopicArn", "StartCommand"} <= set(
        outputs
    )
    sm_id, _ = synth.runner_machine(MAIN)
    assert outputs["StateMachineArn"]["Value"] == {"Ref": sm_id}
    assert outputs["BucketName"]["Value"] == {"Ref": _bucket_id(synth)}
    assert "evalrunner start --aws --bucket " in dump(outputs["StartCommand"]["Value"])


@pytest.mark.parametrize("name", [MAIN, WILDCARD])
def test_environment_agnostic(synth, name):
    """No account or region baked in: synthesis needed no credentials and no lookups."""
    manifest = json.loads((synth.outdir / "manifest.json").read_text())
    assert manifest["artifacts"][name]["environment"] == "aws://unknown-account/unknown-region"
    assert "123456789012" not in dump(synth.templates[name])


def _bucket_id(synth) -> str:
    buckets = synth.resources(MAIN, "AWS::S3::Bucket")
    return next(k for k, b in buckets.items() if "VersioningConfiguration" in b["Properties"])


def test_functions_see_the_default_judge_and_metrics_and_may_call_only_that_model(synth):
    """The seed's events name no judge and often no metric: every function gets cdk.json's
    default judge (Claude on Bedrock) and default metrics, the run-case role may invoke
    exactly that model, and a seed-003 event parsed with that environment is judged with
    it and gets the seed runner's metrics."""
    from evalrunner import run_defaults
    from evalrunner.event import parse_event

    config = synth.configs[MAIN]
    functions = synth.resources(MAIN, "AWS::Lambda::Function").values()
    for fn in functions:
        env = fn["Properties"]["Environment"]["Variables"]
        assert json.loads(env[run_defaults.ENV_JUDGE]) == run_defaults.DEFAULT_BEDROCK_JUDGE
        assert json.loads(env[run_defaults.ENV_DEFAULT_METRICS]) == list(
            run_defaults.SEED_DEFAULT_METRICS
        )
    prepare = next(
        f["Properties"]["Environment"]["Variables"]
        for f in functions
        if f["Properties"]["Handler"] == "lambdas.prepare.handler"
    )
    environ = {k: v for k, v in prepare.items() if isinstance(v, str)}
    with pytest.MonkeyPatch.context() as patch:
        for name in (run_defaults.ENV_JUDGE, run_defaults.ENV_DEFAULT_METRICS):
            patch.setenv(name, environ[name])
        seed = parse_event(
            {
                "key": "test-suites/dp.xlsx",
                "iterations": 2,
                "target": {"stepFunctionArn": TARGETS["state_machine_arns"][0]},
            }
        )
        named = parse_event(
            {
                "key": "test-suites/dp.xlsx",
                "iterations": 2,
                "target": {
                    "stepFunctionArn": TARGETS["state_machine_arns"][0],
                    "metric": "Faithfulness",
                },
            }
        )
    assert seed.judge == named.judge == config.judge
    assert set(run_defaults.SEED_DEFAULT_METRICS) <= set(seed.metrics)
    assert {"Token F1", "Exact match"} <= set(seed.metrics)  # plus the cheap CPU checks
    assert named.metrics == ["Faithfulness"]

    resources = synth.templates[MAIN]["Resources"]
    run_case_role = next(
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"] == "lambdas.run_case.handler"
    )
    judge = [
        (policy, statement)
        for policy, statement in statements(synth.templates[MAIN])
        if statement.get("Sid") == "InvokeDefaultJudge"
    ]
    prepare_role = next(
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"] == "lambdas.prepare.handler"
    )
    workflow_role = next(
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"] == "lambdas.workflow.handler"
    )
    # the run-case role judges the answers; Prepare has the judge rewrite contexts
    # (the misinformation perturbation); the workflow's writes the suite, attacks, artifacts
    assert len(judge) == 3
    roles = [r for policy, _ in judge for r in resources[policy]["Properties"]["Roles"]]
    assert sorted(r["Ref"] for r in roles) == sorted([run_case_role, prepare_role, workflow_role])
    profile = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
    model = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    for _, statement in judge:
        assert "bedrock:InvokeModel" in as_list(statement["Action"])
        resources = [dump(r) for r in as_list(statement["Resource"])]
        # the profile in the stack's region, the model in the stack's region and in every
        # region the US profile routes to, and nothing else (no region wildcard)
        assert any(f"inference-profile/{profile}" in r and "AWS::Region" in r for r in resources)
        regional = [r for r in resources if f"foundation-model/{model}" in r]
        named = {json.loads(r)["Fn::Join"][1][-1] for r in regional if "AWS::Region" not in r}
        assert named == {
            f":bedrock:{region}::foundation-model/{model}"
            for region in ("us-east-1", "us-east-2", "us-west-1", "us-west-2")
        }
        assert len(resources) == 2 + 4
        assert not [r for r in resources if "bedrock:*" in r]


def test_case_runner_concurrency_is_reserved_and_events_are_capped_to_it(synth):
    """cdk.json case_runner_reserved_concurrency: RunCase may take at most that many of the
    account's executions, and every function caps an event's max_concurrency to it."""
    from evalrunner.event import ENV_CONCURRENCY_CAP, concurrency_notice, parse_event
    from evalrunner.pipeline.context import Settings

    functions = synth.resources(MAIN, "AWS::Lambda::Function").values()
    by_handler = {f["Properties"]["Handler"]: f["Properties"] for f in functions}
    run_case = by_handler["lambdas.run_case.handler"]
    assert run_case["ReservedConcurrentExecutions"] == 50
    # ... and the monitor one, so that two scheduled runs never overlap
    assert by_handler["lambdas.monitor.handler"]["ReservedConcurrentExecutions"] == 1
    others = [
        p
        for h, p in by_handler.items()
        if h not in ("lambdas.run_case.handler", "lambdas.monitor.handler")
    ]
    assert not [p for p in others if "ReservedConcurrentExecutions" in p]
    for props in by_handler.values():
        assert props["Environment"]["Variables"][ENV_CONCURRENCY_CAP] == "50"
    prepare_env = by_handler["lambdas.prepare.handler"]["Environment"]["Variables"]
    # the Prepare function's cap (its other variables are CloudFormation references here),
    # read as its runtime reads its environment, once, into its settings
    settings = Settings.from_env({ENV_CONCURRENCY_CAP: prepare_env[ENV_CONCURRENCY_CAP]})
    cap = settings.max_concurrency_cap
    wide = parse_event(
        {
            "key": "test-suites/hr.xlsx",
            "iterations": 1,
            "target": {"lambdaArn": TARGETS["lambda_arns"][0]},
            "max_concurrency": 1000,
        },
        concurrency_cap=cap,
    )
    assert wide.max_concurrency == 50 and wide.max_concurrency_requested == 1000
    notice = concurrency_notice(wide)
    assert notice is not None
    assert "max_concurrency 1000 is capped to 50" in notice
    assert "case_runner_reserved_concurrency" in notice


def test_throttled_lambda_tasks_back_off_longer(synth):
    """TooManyRequestsException gets its own retrier: more attempts, a longer and jittered
    backoff than the other transient Lambda errors (a throttled account needs seconds)."""
    _, sm = synth.runner_machine(MAIN)
    definition = json.loads(sm["Properties"]["DefinitionString"])
    states = dict(definition["States"])
    states.update(states["RunCases"]["ItemProcessor"]["States"])
    tasks = [
        n for n, st in states.items() if st.get("Resource") == "arn:aws:states:::lambda:invoke"
    ]
    assert sorted(tasks) == ["Aggregate", "Prepare", "RecordFailure", "RunCase", "Score"]
    for name in tasks:
        retriers = states[name]["Retry"]
        (throttled,) = [
            r for r in retriers if "Lambda.TooManyRequestsException" in r["ErrorEquals"]
        ]
        (other,) = [r for r in retriers if r is not throttled]
        assert throttled["ErrorEquals"] == ["Lambda.TooManyRequestsException"]
        assert throttled["MaxAttempts"] > other["MaxAttempts"]
        assert throttled["IntervalSeconds"] > other["IntervalSeconds"]
        assert throttled["JitterStrategy"] == "FULL" and throttled["MaxDelaySeconds"] == 60
        total = sum(
            min(throttled["MaxDelaySeconds"], throttled["IntervalSeconds"] * 2.0**i)
            for i in range(throttled["MaxAttempts"])
        )
        assert total >= 5 * 60  # about six minutes of backoff, against 15 s before


def test_judging_roles_may_subscribe_to_exactly_the_listed_marketplace_products(synth):
    """First use of a third-party model subscribes through AWS Marketplace with the caller's
    permissions: the roles that judge get Subscribe, conditioned on the product ids of
    cdk.json, and ViewSubscriptions, as Bedrock documents; no other role gets either."""
    resources = synth.templates[MAIN]["Resources"]
    grants: dict[str, set[str]] = {}
    for policy, statement in statements(synth.templates[MAIN]):
        actions = [a for a in as_list(statement["Action"]) if a.startswith("aws-marketplace:")]
        if not actions:
            continue
        assert statement["Effect"] == "Allow"
        for role in resources[policy]["Properties"]["Roles"]:
            grants.setdefault(role["Ref"], set()).update(actions)
        if "aws-marketplace:Subscribe" in actions:
            assert actions == ["aws-marketplace:Subscribe"]
            assert statement["Condition"] == {
                "ForAnyValue:StringEquals": {"aws-marketplace:ProductId": MARKETPLACE_PRODUCTS}
            }
    judging = {
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
        and r["Properties"]["Handler"]
        in ("lambdas.run_case.handler", "lambdas.prepare.handler", "lambdas.workflow.handler")
    }
    assert set(grants) == judging
    for actions in grants.values():
        assert actions == {"aws-marketplace:Subscribe", "aws-marketplace:ViewSubscriptions"}


def test_no_marketplace_grant_without_product_ids(synth):
    """Without cdk.json marketplace_product_ids, no role may subscribe to anything: the
    README's console step does the first-use subscription."""
    for _, statement in statements(synth.templates[WILDCARD]):
        assert not [a for a in as_list(statement["Action"]) if a.startswith("aws-marketplace:")]
