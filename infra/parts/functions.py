"""The five Lambda functions (Prepare, RunCase, Score, Aggregate, StartFromUpload), each with
its own role and log group, the code asset and dependencies layer they share, and what the
run-case role may call (the configured targets and secrets)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aws_cdk import Aws, Duration, IgnoreMode, RemovalPolicy, Size, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns

from evalrunner.event import ENV_CONCURRENCY_CAP, SUITE_PREFIX
from evalrunner.judge.cache import BUCKET_PREFIX as JUDGE_CACHE_PREFIX
from evalrunner.judge.lifecycle import INFERENCE_PROFILE
from evalrunner.network import ENV_POLICY as ENV_NETWORK_POLICY
from evalrunner.redteam.prepare import ATTACKS_PREFIX
from evalrunner.reports.writers.publish import CLAIM_NAME
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


def stage_code(
    root: Path, names: Sequence[str], plugins: Sequence[Path], plugins_under: str = "."
) -> None:
    """Copy the repository's ``names`` (folders or files) into ``root``, and each plugin (a
    package folder or a .py file, cdk.json ``plugins``) into ``root/plugins_under``, where it
    is imported by its own name: the code an asset is made from, without caches."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in names:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=ignore)
        else:
            shutil.copy2(source, root / name)
    where = root / plugins_under
    where.mkdir(parents=True, exist_ok=True)
    for path in plugins:
        if path.is_dir():
            shutil.copytree(path, where / path.name, ignore=ignore)
        else:
            shutil.copy2(path, where / path.name)


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
        self.code = self._code_asset()
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
            # runs/redteam/: the attacks an event's red team stored, read back by its next run
            read=(SUITE_PREFIX, JUDGE_CACHE_PREFIX, ATTACKS_PREFIX),
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
            # cdk.json case_runner_reserved_concurrency: a 1000-wide Map cannot take the
            # account's whole pool, and max_concurrency is capped to it (ENV_CONCURRENCY_CAP).
            reserved=config.case_runner_reserved_concurrency,
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

    def function(
        self,
        name: str,
        handler: str,
        description: str,
        *,
        memory: int,
        timeout: Duration,
        env: dict[str, str],
        reserved: int | None = None,
        image: lambda_.DockerImageCode | None = None,
        storage_mib: int | None = None,
    ) -> lambda_.Function:
        """A function built like the pipeline's (its own role and log group, the shared code
        and layer, the deployment's environment), for the parts beside the pipeline (the
        monitor, ``infra/parts/monitoring.py``); with ``image``, a container image function
        of that code instead (its handler is the image's command); ``storage_mib``: its
        ephemeral storage (``/tmp``), Lambda's default 512 MiB when None."""
        return self._function(
            name,
            handler,
            description,
            memory=memory,
            timeout=timeout,
            env=env,
            reserved=reserved,
            image=image,
            storage_mib=storage_mib,
        )

    def _function(
        self,
        name: str,
        handler: str,
        description: str,
        *,
        memory: int,
        timeout: Duration,
        env: dict[str, str],
        reserved: int | None = None,
        image: lambda_.DockerImageCode | None = None,
        storage_mib: int | None = None,
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
        settings: dict[str, Any] = dict(
            architecture=lambda_.Architecture.X86_64,
            role=role,
            description=f"evalrunner: {description}",
            memory_size=memory,
            timeout=timeout,
            reserved_concurrent_executions=reserved,
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            ephemeral_storage_size=Size.mebibytes(storage_mib) if storage_mib else None,
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
                **self._concurrency_env(),
                # The plugin modules bundled below, the only ones an event may name.
                **self.config.plugins_env(),
                **env,
            },
        )
        fn = (
            lambda_.DockerImageFunction(self.stack, name, code=image, **settings)
            if image is not None
            else lambda_.Function(
                self.stack,
                name,
                runtime=RUNTIME,
                handler=handler,
                code=self.code,
                layers=[self.layer],
                **settings,
            )
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

    def _code_asset(self) -> lambda_.AssetCode:
        """The functions' code: the repository's :data:`CODE_PACKAGES`, and with cdk.json
        ``plugins`` each plugin package or module beside them (top level of the asset, so
        importable by its name), copied into one staging folder the asset is made from."""
        paths = self.config.plugin_paths()
        if not paths:
            return lambda_.Code.from_asset(
                str(REPO_ROOT), exclude=CODE_EXCLUDES, ignore_mode=IgnoreMode.GLOB
            )
        # Kept as long as this object: CDK copies the asset into the cloud assembly when the
        # first function binds it, and the folder is removed with the object or at exit.
        self._staging = tempfile.TemporaryDirectory(prefix="evalrunner-code-")
        stage_code(Path(self._staging.name), CODE_PACKAGES, paths)
        return lambda_.Code.from_asset(self._staging.name)

    def _concurrency_env(self) -> dict[str, str]:
        """The case runner's reservation, which an event's max_concurrency is capped to
        (:func:`evalrunner.event.concurrency_cap`); none without a reservation."""
        reserved = self.config.case_runner_reserved_concurrency
        return {ENV_CONCURRENCY_CAP: str(reserved)} if reserved is not None else {}

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
                    actions=list(
                        dict.fromkeys([*actions, "bedrock:InvokeModel", "bedrock:ApplyGuardrail"])
                    ),
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
        if t.guardrail_arns:  # a knowledge base's generation may apply exactly these
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ApplyKnowledgeBaseGuardrails",
                    actions=["bedrock:ApplyGuardrail"],
                    resources=list(t.guardrail_arns),
                )
            )
        return role

    def grant_judge(self, role: iam.IRole) -> None:
        """The default judge for a role beside the pipeline's (the workflow's function)."""
        self._judge_permission(role)

    def _judge_permission(self, role: iam.IRole) -> None:
        """The default judge (cdk.json ``judge``, a Bedrock model) and nothing else: the
        Converse API is authorised as bedrock:InvokeModel on the model. A cross-region
        inference profile (``us.``, ``eu.``, ... ids) is granted as AWS documents it: the
        profile in the stack's region and the foundation model in each region the profile
        may route to (a ``global.`` profile: any commercial region, the region-less model
        ARN). Marketplace: :meth:`_marketplace_permission`."""
        model = self.config.judge_model_id()
        if model is None:
            return
        bedrock = (self.config.judge or {}).get("bedrock") or {}
        resources = judge_resources(
            model,
            region=bedrock.get("region") or self.stack.region,
            partition=self.stack.partition,
            account=self.stack.account,
            profile_regions=self.config.judge_profile_regions,
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="InvokeDefaultJudge",
                actions=["bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"],
                resources=resources,
            )
        )
        self._marketplace_permission(role)

    def _marketplace_permission(self, role: iam.IRole) -> None:
        """First use of a third-party model in an account subscribes to it through AWS
        Marketplace, with the caller's permissions (Bedrock, "Request access to models"):
        aws-marketplace:Subscribe scoped to the listed product ids, and ViewSubscriptions.
        Without ``marketplace_product_ids`` nothing is granted and the README's console step
        (open the model once in the Bedrock console) does the subscription instead."""
        products = self.config.marketplace_product_ids
        if not products:
            return
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="SubscribeJudgeModelOnFirstUse",
                actions=["aws-marketplace:Subscribe"],
                resources=["*"],
                conditions={
                    "ForAnyValue:StringEquals": {"aws-marketplace:ProductId": list(products)}
                },
            )
        )
        role.add_to_principal_policy(
            iam.PolicyStatement(
                sid="ViewJudgeModelSubscriptions",
                actions=["aws-marketplace:ViewSubscriptions"],
                resources=["*"],
            )
        )
        acknowledge(
            role,
            "AwsSolutions-IAM5[Resource::*]",
            "AWS Marketplace subscriptions have no resource ARN: Subscribe is scoped by the "
            "aws-marketplace:ProductId condition to the judge models listed in cdk.json, "
            "ViewSubscriptions only reads (as Bedrock's model-access page documents).",
        )


#: The regions a cross-region inference profile of each geography routes to, as Bedrock's
#: inference-profile page lists them for Claude models (cdk.json judge_profile_regions
#: overrides it for a model whose profile differs).
PROFILE_REGIONS: dict[str, list[str]] = {
    "us": ["us-east-1", "us-east-2", "us-west-1", "us-west-2"],
    "eu": ["eu-central-1", "eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-3"],
    "apac": [
        "ap-northeast-1",
        "ap-northeast-2",
        "ap-northeast-3",
        "ap-south-1",
        "ap-south-2",
        "ap-southeast-1",
        "ap-southeast-2",
        "ap-southeast-4",
    ],
    "jp": ["ap-northeast-1", "ap-northeast-3"],
    "au": ["ap-southeast-2", "ap-southeast-4"],
    "ca": ["ca-central-1", "ca-west-1"],
    "us-gov": ["us-gov-east-1", "us-gov-west-1"],
}


def judge_resources(
    model: str, *, region: str, partition: str, account: str, profile_regions: list[str] | None
) -> list[str]:
    """The resources bedrock:InvokeModel needs for a judge ``model`` (an id or an ARN) called
    from ``region``: a foundation model there; for a cross-region inference profile, as AWS
    documents it, the profile in ``region`` and its foundation model in ``region`` and in
    every region the profile routes to (``profile_regions``, default :data:`PROFILE_REGIONS`
    of its geography); a ``global.`` profile routes to any commercial region, which the
    region-less foundation-model ARN stands for."""
    if model.startswith("arn:"):
        return [model]
    profile = INFERENCE_PROFILE.match(model)
    if not profile:
        return [f"arn:{partition}:bedrock:{region}::foundation-model/{model}"]
    base = INFERENCE_PROFILE.sub("", model)
    resources = [
        f"arn:{partition}:bedrock:{region}:{account}:inference-profile/{model}",
        f"arn:{partition}:bedrock:{region}::foundation-model/{base}",
    ]
    if profile.group(1) == "global":
        resources.append(f"arn:{partition}:bedrock:::foundation-model/{base}")
    else:
        regions = profile_regions or PROFILE_REGIONS.get(profile.group(1), [])
        resources += [f"arn:{partition}:bedrock:{r}::foundation-model/{base}" for r in regions]
    return list(dict.fromkeys(resources))


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
