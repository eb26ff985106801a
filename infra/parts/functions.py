"""The five Lambda functions (Prepare, RunCase, Score, Aggregate, StartFromUpload), each with
its own role and log group, the code asset and dependencies layer they share, and what the
run-case role may call (the configured targets and secrets)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from aws_cdk import Aws, Duration, IgnoreMode, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns

from evalrunner.event import SUITE_PREFIX
from evalrunner.judge.cache import BUCKET_PREFIX as JUDGE_CACHE_PREFIX
from evalrunner.network import ENV_POLICY as ENV_NETWORK_POLICY
from evalrunner.reports.publish import CLAIM_NAME
from evalrunner.secrets import ENV_POLICY as ENV_SECRETS_POLICY
from evalrunner.storage import REPORTS_PREFIX, RUNS_PREFIX
from evalrunner.targets.registry import available as target_kinds
from evalrunner.upload import ENV_DEFAULT_ITERATIONS, ENV_DEFAULT_TARGET, REJECTED_PREFIX
from infra.config import RunnerConfig
from infra.parts.bucket import RunnerBucket
from infra.parts.common import (
    METRICS_NAMESPACE,
    REPO_ROOT,
    RUNTIME,
    SERVICE,
    acknowledge,
    redundant_role_dependency_is_intended,
    retention,
    role_of,
)

#: The Lambda code asset is the repository with only these folders kept (glob, later wins).
CODE_PACKAGES = ("evalrunner", "lambdas", "state_machines")
CODE_EXCLUDES = [
    "*",
    ".*",
    *(p for pkg in CODE_PACKAGES for p in (f"!{pkg}", f"!{pkg}/**")),
    "**/__pycache__",
    "**/*.pyc",
]


class PipelineFunctions:
    """Builds the functions in ``stack``'s scope; ``state_machine_arn`` is the (not yet
    created) test runner's, which the upload function starts."""

    def __init__(
        self,
        stack: Stack,
        *,
        config: RunnerConfig,
        removal: RemovalPolicy,
        storage: RunnerBucket,
        topic: sns.ITopic,
        state_machine_arn: str,
        dependencies: Path,
    ) -> None:
        self.stack = stack
        self.config = config
        self.removal = removal
        bucket = storage.bucket
        self.code = lambda_.Code.from_asset(
            str(REPO_ROOT), exclude=CODE_EXCLUDES, ignore_mode=IgnoreMode.GLOB
        )
        self.layer = lambda_.LayerVersion(
            stack,
            "Dependencies",
            code=lambda_.Code.from_asset(str(dependencies)),
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[lambda_.Architecture.X86_64],
            description="evalrunner: third-party dependencies (make lambda-package), no torch",
        )
        bucket_env = {"EVALRUNNER_BUCKET": bucket.bucket_name}
        self.prepare_fn = self._function(
            "Prepare",
            "lambdas.prepare.handler",
            "Validate the event and the suite, write the case manifest.",
            memory=1024,
            # A misinformation perturbation has the judge rewrite a chunk of every case here.
            timeout=Duration.minutes(15),
            env=bucket_env,
        )
        # ... with the run's judge (misinformation): the default judge's model. Not the
        # secrets: only the run-case role reads them, so a deployed Prepare cannot use an
        # OpenAI-compatible judge whose key is in api_key_secret (README, Robustness).
        self._judge_permission(role_of(self.prepare_fn))
        storage.grant(  # lists test-reports/ for a free report prefix
            role_of(self.prepare_fn),
            read=(SUITE_PREFIX, JUDGE_CACHE_PREFIX),
            write=(RUNS_PREFIX, JUDGE_CACHE_PREFIX),
        )
        # ... and claims it with a conditional put of <prefix>claim.json, nothing else there
        claims = f"{REPORTS_PREFIX}*{CLAIM_NAME}"
        role_of(self.prepare_fn).add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[bucket.arn_for_objects(claims)]
            )
        )
        acknowledge(
            role_of(self.prepare_fn),
            f"AwsSolutions-IAM5[Resource::<{storage.bucket_id}.Arn>/{claims}]",
            "Prepare claims a run's report prefix by creating <prefix>claim.json (conditional "
            "put); report prefixes are per target and second, so the key needs a wildcard.",
        )
        self.run_case_fn = self._function(
            "RunCase",
            "lambdas.run_case.handler",
            "Call the target for one test case and score it.",
            memory=1024,
            timeout=Duration.minutes(15),
            env=bucket_env,
        )
        # The judge's response cache (judge-cache/ in the run bucket) is read and written by
        # the roles that judge: this one and Prepare (misinformation perturbations).
        storage.grant(
            role_of(self.run_case_fn),
            read=(RUNS_PREFIX, JUDGE_CACHE_PREFIX),
            write=(RUNS_PREFIX, JUDGE_CACHE_PREFIX),
        )
        self.score_fn = self._function(
            "Score",
            "lambdas.score.handler",
            "Model scoring of a whole run, in-process (small runs; large ones go to Batch).",
            memory=2048,
            timeout=Duration.minutes(15),
            env=bucket_env,
        )
        storage.grant(
            role_of(self.score_fn),
            read=(RUNS_PREFIX,),
            write=(RUNS_PREFIX,),
        )
        self.aggregate_fn = self._function(
            "Aggregate",
            "lambdas.aggregate.handler",
            "Merge, compute and write the reports; publish the summary.",
            memory=2048,
            timeout=Duration.minutes(10),
            env={**bucket_env, "EVALRUNNER_TOPIC_ARN": topic.topic_arn},
        )
        storage.grant(  # reads earlier reports of the target: the baseline
            role_of(self.aggregate_fn),
            read=(RUNS_PREFIX, REPORTS_PREFIX),
            write=(REPORTS_PREFIX,),
        )
        topic.grant_publish(role_of(self.aggregate_fn))
        acknowledge(
            role_of(self.aggregate_fn),
            "AwsSolutions-IAM5[Action::kms:GenerateDataKey*]",
            "Publishing to an SSE-KMS topic needs kms:GenerateDataKey* and kms:Decrypt (as the "
            "SNS documentation prescribes), granted on the topic's own key only.",
        )

        defaults = config.upload_defaults
        upload_env = {
            **bucket_env,
            "EVALRUNNER_STATE_MACHINE_ARN": state_machine_arn,
        }
        if defaults.target is not None:
            upload_env[ENV_DEFAULT_TARGET] = json.dumps(defaults.target, separators=(",", ":"))
        if defaults.iterations is not None:
            upload_env[ENV_DEFAULT_ITERATIONS] = str(defaults.iterations)
        self.upload_fn = self._function(
            "StartFromUpload",
            "lambdas.start_from_upload.handler",
            "Start a run for a suite uploaded under test-suites/, or write why it cannot run.",
            memory=1024,
            timeout=Duration.minutes(2),
            env=upload_env,
        )
        storage.grant(
            role_of(self.upload_fn),
            read=(SUITE_PREFIX,),
            tags=(SUITE_PREFIX,),
            write=(REJECTED_PREFIX,),
            delete=(REJECTED_PREFIX,),
        )
        role_of(self.upload_fn).add_to_principal_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[state_machine_arn])
        )
        #: The run-case role: the one that calls targets (a stack output).
        self.runner_role = self._target_permissions()

    def _function(
        self,
        name: str,
        handler: str,
        description: str,
        *,
        memory: int,
        timeout: Duration,
        env: dict[str, str],
    ) -> lambda_.Function:
        role = iam.Role(
            self.stack,
            f"{name}Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"evalrunner {name} function",
        )
        log_group = logs.LogGroup(
            self.stack,
            f"{name}Logs",
            retention=retention(self.config.log_retention_days),
            removal_policy=self.removal,
        )
        log_group.grant_write(role)
        fn = lambda_.Function(
            self.stack,
            name,
            runtime=RUNTIME,
            architecture=lambda_.Architecture.X86_64,
            handler=handler,
            code=self.code,
            layers=[self.layer],
            role=role,
            description=f"evalrunner: {description}",
            memory_size=memory,
            timeout=timeout,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            environment={
                "POWERTOOLS_SERVICE_NAME": SERVICE,
                "POWERTOOLS_LOG_LEVEL": self.config.log_level,
                "POWERTOOLS_METRICS_NAMESPACE": METRICS_NAMESPACE,
                # Deployed policies (evalrunner.secrets / evalrunner.network): events may name
                # only the listed secrets, and requests to internal addresses are refused.
                ENV_SECRETS_POLICY: self.config.secrets_policy_json(),
                ENV_NETWORK_POLICY: self.config.network.policy_json(),
                # What an event that names no judge / no metric runs with (cdk.json).
                **self.config.defaults_env(),
                **env,
            },
        )
        redundant_role_dependency_is_intended(fn)
        acknowledge(
            fn,
            "AwsSolutions-L1",
            "Python 3.12 is the runtime the dependencies layer is built for (make "
            "lambda-package: cp312 manylinux wheels) and the one the issue fixes; moving to a "
            "newer runtime means rebuilding the layer, a deliberate upgrade.",
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "X-Ray tracing (xray:PutTraceSegments, xray:PutTelemetryRecords) does not support "
            "resource-level permissions.",
        )
        return fn

    def _target_permissions(self) -> iam.IRole:
        """What the run-case role may call: the configured targets, or everything by
        explicit opt-in (allow_all_targets)."""
        role = role_of(self.run_case_fn)
        t = self.config.targets
        if self.config.secrets:
            # Exactly the secrets cdk.json lists, whatever allow_all_targets says.
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ReadAllowedSecrets",
                    actions=["secretsmanager:GetSecretValue"],
                    resources=list(self.config.secrets),
                )
            )
        self._judge_permission(role)
        kinds = [cls for cls in target_kinds().values() if cls.iam]
        if self.config.allow_all_targets:
            actions = [a for cls in kinds for grant in cls.iam for a in grant.actions]
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="AllTargetsOptIn",
                    actions=list(dict.fromkeys([*actions, "bedrock:InvokeModel"])),
                    resources=["*"],
                )
            )
            acknowledge(
                role,
                "AwsSolutions-IAM5[Resource::*]",
                "allow_all_targets is true in cdk.json: the operator opted in, explicitly, to "
                "let the runner invoke any Lambda function, state machine, agent, knowledge "
                "base and model its account allows (and X-Ray needs '*').",
            )
            return role
        for cls in kinds:  # each kind declares its statements (Target.iam)
            assert cls.deploy_list is not None, f"{cls.__name__} declares iam but no deploy_list"
            entries = getattr(t, cls.deploy_list)
            if not entries:
                continue
            for grant in cls.iam:
                resources = list(dict.fromkeys(_grant_resource(grant.resource, e) for e in entries))
                role.add_to_principal_policy(
                    iam.PolicyStatement(
                        sid=grant.sid, actions=list(grant.actions), resources=resources
                    )
                )
                if grant.wildcard_reason:
                    for resource in resources:
                        acknowledge(
                            role, f"AwsSolutions-IAM5[Resource::{resource}]", grant.wildcard_reason
                        )
        if t.model_arns:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="InvokeJudgeAndGenerationModels",
                    actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                    resources=list(t.model_arns),
                )
            )
        return role

    def _judge_permission(self, role: iam.IRole) -> None:
        """The default judge (cdk.json ``judge``, a Bedrock model) and nothing else: the
        Converse API is authorised as bedrock:InvokeModel on the model. A cross-region
        inference profile (``us.``, ``eu.``, ... ids) is granted with the foundation model it
        routes to, in any region the profile may pick."""
        model = self.config.judge_model_id()
        if model is None:
            return
        bedrock = (self.config.judge or {}).get("bedrock") or {}
        region = bedrock.get("region") or self.stack.region
        partition = self.stack.partition
        if model.startswith("arn:"):
            resources = [model]
        elif INFERENCE_PROFILE.match(model):
            base = INFERENCE_PROFILE.sub("", model)
            resources = [
                f"arn:{partition}:bedrock:{region}:{self.stack.account}:inference-profile/{model}",
                f"arn:{partition}:bedrock:*::foundation-model/{base}",
            ]
            acknowledge(
                role,
                f"AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/{base}]",
                "A cross-region inference profile routes each call to the foundation model in "
                "one of its regions, chosen by Bedrock: the model is fixed, the region is not.",
            )
        else:
            resources = [f"arn:{partition}:bedrock:{region}::foundation-model/{model}"]
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="InvokeDefaultJudge",
                actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                resources=resources,
            )
        )


#: A Bedrock cross-region inference profile id's geography prefix.
INFERENCE_PROFILE = re.compile(r"^(us|eu|apac|us-gov|ca|jp|au|global)\.")


def _grant_resource(pattern: str, entry: Any) -> str:
    """A target's IAM resource pattern (:class:`evalrunner.targets.base.IamGrant`) for one
    entry of its cdk.json list: an ARN, or an object whose region and account default to
    the stack's."""
    if isinstance(entry, str):
        parts = entry.split(":")
        fields = {
            "arn": entry,
            "partition": parts[1],
            "region": parts[3],
            "account": parts[4],
            "name": parts[6] if len(parts) > 6 else "",
        }
    else:
        fields = entry.model_dump()
        fields.update(
            partition=Aws.PARTITION,
            region=fields.get("region") or Aws.REGION,
            account=fields.get("account") or Aws.ACCOUNT_ID,
        )
    return pattern.format(**fields)
