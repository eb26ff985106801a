"""Least privilege, proved against a server that enforces IAM (issue 29 item 9).

Each Lambda role's identity policy is taken from the synthesised template (the session's
``synth`` fixture), its references substituted with the local bucket, topic and state
machine, and given to an IAM user of moto's server (``ThreadedMotoServer`` on 127.0.0.1, with
authentication on once the users exist: the server's ``/moto-api/reset-auth``, which moto's
``set_initial_no_auth_action_count`` calls in server mode, so every request is signed and
checked against the caller's policies). The role's handler then runs with that user's keys:

- with the whole policy, every AWS call the handler makes is allowed and it does its work;
- with any one grant (statement x action x resource) removed, some call is denied.

So a grant the code needs but the stack forgets (issue 29 item 3: the judge cache under
``judge-cache/``) fails here, and so does a grant nobody uses any more. Each run gets a fresh
bucket, so nothing a previous run wrote (a record, a cached judge reply) saves a call.

moto checks S3 calls against the object's or bucket's ARN, but every other service's calls
against ``*``: for those (SNS Publish, StartExecution) the user gets the grant's actions on
``*`` and the test checks the ARN the call named against the template's statement itself,
with moto's own policy evaluator. moto answers a missing key with 404 where S3 answers 403 to
a caller without s3:ListBucket: a role whose handler reads a missing key (seen in the run)
keeps ListBucket for that. Grants no call here can exercise are listed with the reason:
``NOT_HANDLER_CALLS`` by action (the Lambda service writes the logs and traces; SNS uses the
topic's key; there is no local Bedrock, so neither the Bedrock judge nor Bedrock targets, nor
the Marketplace subscription Bedrock makes), ``OUTSIDE_THE_STACK`` by statement id (the
targets, the secrets); ``MAY_SKIP`` says which role may hold which of them.

The production monitor's role is proved the same way: its handler reads the log source (a
bucket outside the stack, listed under an ``s3:prefix`` condition that moto's server does
not evaluate, so this file checks each listing's prefix against it), the answer body one
record names in cdk.json ``monitor.large_bodies`` (Bedrock stores bodies over 100 KB apart),
its watermark, writes its suite and starts the test runner.

The workflow's role (``infra/parts/workflow.py``) is proved the same way: its handler's
tasks read the suite under ``workflow-inputs/``, write the state under ``workflows/``, write
each run's suite under ``test-suites/_workflow/``, start the test runner and describe the run
(for that role the server executes state machines, ``/moto-api/config``, and the test runner
is a Pass state ending with the seed's run summary, as a finished run's execution does), copy
the run's reports from ``test-reports/``, and have the judge write the attacks through
``judge-cache/``.
"""

from __future__ import annotations

import copy
import gzip
import itertools
import json
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import pytest
import requests
from botocore.exceptions import ClientError
from moto.iam.access_control import IAMPolicy, PermissionResult
from moto.server import ThreadedMotoServer

from evalrunner.network import ENV_POLICY as ENV_NETWORK_POLICY
from evalrunner.pipeline.context import Runtime
from evalrunner.redteam.prepare import ATTACKS_PREFIX
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.registry import available as target_kinds
from lambdas import aggregate, monitor, prepare, run_case, score, start_from_upload, workflow
from tests.support.catalog import restored_catalog
from tests.support.judge_stub import JudgeStub
from tests.support.local_model import LocalModel
from tests.support.redteam import RedTeamJudge
from tests.support.workflow import WorkflowJudge

from .conftest import MONITOR, as_list

MAIN = "Evalrunner"
REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's default account: the server's resources live there
SUITE_KEY = "test-suites/iam.csv"
SUITE = (
    "id,question,expected_answer,retrieved_contexts\n"
    'leave,How many days of annual leave?,25 days,"[""Staff get 25 days of annual leave.""]"\n'
    'pension,What is the pension match?,6%,"[""The company matches pensions up to 6%.""]"\n'
)
RUN_ID = "iam-proof"

#: Statements no handler's code makes a call for, by action prefix, and why.
NOT_HANDLER_CALLS = {
    "logs:": "the Lambda service writes the function's log group, not the handler",
    "xray:": "the Lambda service sends the active-tracing segments, not the handler",
    "kms:": (
        "a service uses a key on the caller's behalf (SNS the topic's, S3 the monitor's log "
        "source's); moto's SNS and S3 do not"
    ),
    # the judge (default, or a Bedrock model an event names) and Bedrock targets: moto's
    # server has no Bedrock runtime; the judge here is an OpenAI-compatible loopback stub,
    # which caches in judge-cache/ as the Bedrock judge does
    "bedrock:": "Bedrock: no local runtime (the judge and Bedrock targets)",
    "aws-marketplace:": "Bedrock subscribes on a model's first use, with the caller's grant",
    # tests/unit/lambdas/test_aggregate_signals.py runs a monitor run through Aggregate
    "cloudwatch:": "only a monitor run puts its series; the run proved here is a suite run",
}
#: ... and by statement id: what the run-case role calls outside the stack (the targets each
#: kind declares, tested against Stubber replies in tests/unit/targets; the secrets an event
#: names). moto's server cannot run a Lambda function without Docker.
OUTSIDE_THE_STACK = {
    *(grant.sid for cls in target_kinds().values() for grant in cls.iam),
    "ReadAllowedSecrets",
}
#: What each role may hold that no handler call here exercises (by action prefix).
MAY_SKIP = {
    "RunCaseRole": (
        "logs:",
        "xray:",
        "bedrock:",
        "aws-marketplace:",
        "lambda:",
        "states:",
        "secretsmanager:",
    ),
    "PrepareRole": ("logs:", "xray:", "bedrock:", "aws-marketplace:"),
    "AggregateRole": ("logs:", "xray:", "kms:", "cloudwatch:"),
    "MonitorRole": ("logs:", "xray:", "kms:"),
    "WorkflowRole": ("logs:", "xray:", "bedrock:", "aws-marketplace:"),
}
#: Conditions this file checks itself against each call (moto's server evaluates none of
#: them on S3): condition operator -> the condition keys it reads from the call.
CHECKED_CONDITIONS = {("StringLike", "s3:prefix")}


def exempt(statement: dict[str, Any], action: str) -> str | None:
    """Why no handler call needs ``action`` of ``statement``; None: some call must."""
    if statement.get("Sid") in OUTSIDE_THE_STACK:
        return f"{statement['Sid']}: outside the stack"
    return next(
        (why for prefix, why in NOT_HANDLER_CALLS.items() if action.startswith(prefix)), None
    )


# ------------------------------------------------------------------------ the local account


@dataclass
class Local:
    """What the template's references stand for on the local server."""

    endpoint: str
    bucket: str = "unset"
    topic_arn: str = ""
    state_machine_arn: str = ""

    def resolve(self, value: Any, logical_types: dict[str, str]) -> Any:
        """``value`` with CloudFormation's intrinsics replaced by local values."""
        if isinstance(value, list):
            return [self.resolve(v, logical_types) for v in value]
        if not isinstance(value, dict):
            return value
        if "Ref" in value:
            return self._ref(value["Ref"], logical_types)
        if "Fn::GetAtt" in value:
            logical_id, attribute = value["Fn::GetAtt"]
            kind = logical_types[logical_id]
            if kind == "AWS::S3::Bucket" and attribute == "Arn":
                return f"arn:aws:s3:::{self._bucket_name(logical_id)}"
            return f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:{logical_id}/{attribute}"
        if "Fn::Join" in value:
            sep, parts = value["Fn::Join"]
            return sep.join(str(self.resolve(p, logical_types)) for p in parts)
        if len(value) == 1 and next(iter(value)).startswith("Fn::"):
            raise AssertionError(f"unhandled intrinsic in a policy: {value}")
        return {k: self.resolve(v, logical_types) for k, v in value.items()}

    def _bucket_name(self, logical_id: str) -> str:
        return self.bucket if logical_id.startswith("RunnerBucket") else f"other-{logical_id}"

    def _ref(self, name: str, logical_types: dict[str, str]) -> str:
        pseudo = {"AWS::Partition": "aws", "AWS::Region": REGION, "AWS::AccountId": ACCOUNT}
        if name in pseudo:
            return pseudo[name]
        kind = logical_types.get(name)
        if kind == "AWS::S3::Bucket":
            return self._bucket_name(name)
        if kind == "AWS::SNS::Topic":
            return self.topic_arn
        if kind == "AWS::StepFunctions::StateMachine":
            return self.state_machine_arn
        return f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:{name}"


@dataclass(frozen=True)
class Grant:
    """One action on one resource of one statement of a role's policy."""

    statement: int
    action: str
    resource: str


@dataclass
class RolePolicy:
    """A role's statements from the template (still with their CloudFormation references)."""

    role: str
    statements: list[dict[str, Any]]
    logical_types: dict[str, str]

    def grants(self) -> list[Grant]:
        out = []
        for n, statement in enumerate(self.statements):
            assert statement["Effect"] == "Allow", statement
            # a condition narrows a grant the server cannot check (the Marketplace product
            # ids): only on the grants no handler here exercises, or one this file checks
            # against the calls itself (the monitor's listing of its source prefix)
            assert (
                "Condition" not in statement
                or all(
                    str(a).startswith(tuple(NOT_HANDLER_CALLS))
                    for a in as_list(statement["Action"])
                )
                or {
                    (operator, key)
                    for operator, keys in statement["Condition"].items()
                    for key in keys
                }
                <= CHECKED_CONDITIONS
            ), statement
            for action in as_list(statement["Action"]):
                for resource in as_list(statement["Resource"]):
                    out.append(Grant(n, action, json.dumps(resource, sort_keys=True)))
        return out

    def document(self, local: Local, without: Grant | None = None) -> dict[str, Any]:
        """The policy with local values, ``without`` one grant."""
        statements = []
        for n, statement in enumerate(self.statements):
            for action in as_list(statement["Action"]):
                resources = [
                    local.resolve(r, self.logical_types)
                    for r in as_list(statement["Resource"])
                    if without != Grant(n, action, json.dumps(r, sort_keys=True))
                ]
                if resources:
                    statements.append({"Effect": "Allow", "Action": action, "Resource": resources})
        return {"Version": "2012-10-17", "Statement": statements}

    def may_list(self, local: Local, without: Grant | None, bucket: str, prefix: str) -> bool:
        """Whether the policy (``without`` one grant) lets a caller list ``prefix`` of
        ``bucket``, its ``s3:prefix`` conditions included (moto's server ignores them)."""
        arn = f"arn:aws:s3:::{bucket}"
        for n, statement in enumerate(self.statements):
            if "s3:ListBucket" not in as_list(statement["Action"]):
                continue
            for resource in as_list(statement["Resource"]):
                if without == Grant(n, "s3:ListBucket", json.dumps(resource, sort_keys=True)):
                    continue
                if local.resolve(resource, self.logical_types) != arn:
                    continue
                condition = statement.get("Condition")
                if condition is None:
                    return True
                patterns = as_list(condition["StringLike"]["s3:prefix"])
                if any(string_like(str(p), prefix) for p in patterns):
                    return True
        return False


def string_like(pattern: str, value: str) -> bool:
    """IAM's StringLike: ``*`` any run of characters, ``?`` any one, the rest literal."""
    regex = re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".")
    return re.fullmatch(regex, value) is not None


def role_policies(template: dict[str, Any]) -> dict[str, RolePolicy]:
    """Each Lambda role's identity-policy statements, by the role's logical id."""
    resources = template["Resources"]
    types = {k: r["Type"] for k, r in resources.items()}
    roles = {
        r["Properties"]["Role"]["Fn::GetAtt"][0]
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function"
    }
    policies: dict[str, RolePolicy] = {}
    for resource in resources.values():
        if resource["Type"] != "AWS::IAM::Policy":
            continue
        for role in resource["Properties"]["Roles"]:
            if role["Ref"] in roles:
                policy = policies.setdefault(role["Ref"], RolePolicy(role["Ref"], [], types))
                policy.statements.extend(resource["Properties"]["PolicyDocument"]["Statement"])
    assert not any(
        r["Properties"].get("ManagedPolicyArns") for k, r in resources.items() if k in roles
    )
    assert set(policies) == roles
    return policies


def function_env(template: dict[str, Any], role: str, local: Local) -> dict[str, str]:
    """The environment the template gives the function of ``role``, with local values."""
    resources = template["Resources"]
    types = {k: r["Type"] for k, r in resources.items()}
    (fn,) = [
        r
        for r in resources.values()
        if r["Type"] == "AWS::Lambda::Function" and r["Properties"]["Role"]["Fn::GetAtt"][0] == role
    ]
    variables = fn["Properties"]["Environment"]["Variables"]
    return {k: str(local.resolve(v, types)) for k, v in variables.items()}


# ------------------------------------------------------------------------ the server


@dataclass
class Call:
    service: str
    operation: str
    params: dict[str, Any]
    error: str | None = None


@dataclass
class Server:
    endpoint: str
    admin: boto3.Session
    user: boto3.Session
    buckets: Iterator[int] = field(default_factory=lambda: itertools.count())

    def client(self, service: str) -> Any:
        return self.admin.client(service, endpoint_url=self.endpoint, region_name=REGION)


def reset_auth(endpoint: str, unauthenticated: float) -> float:
    """Authentication starts after ``unauthenticated`` more requests: the server's
    ``/moto-api/reset-auth``, which moto's ``set_initial_no_auth_action_count`` decorator calls
    in server mode. Returns the previous setting."""
    reply = requests.post(f"{endpoint}/moto-api/reset-auth", data=str(unauthenticated), timeout=10)
    reply.raise_for_status()
    return float(reply.json()["PREVIOUS_INITIAL_NO_AUTH_ACTION_COUNT"])


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    """moto's server with authentication on once the two users exist: an admin user (every
    action) does the set-up, the ``role`` user gets each role's policy in turn."""
    motoserver = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    motoserver.start()
    host, port = motoserver.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    previous = reset_auth(endpoint, 5)  # create 2 users, 2 keys, the admin's policy
    try:
        iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            region_name=REGION,
            aws_access_key_id="bootstrap",
            aws_secret_access_key="bootstrap",
        )
        keys = {}
        for name in ("admin", "role"):
            iam.create_user(UserName=name)
            keys[name] = iam.create_access_key(UserName=name)["AccessKey"]
        everything = {"Effect": "Allow", "Action": "*", "Resource": "*"}
        iam.put_user_policy(
            UserName="admin",
            PolicyName="all",
            PolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": [everything]}),
        )
        admin, user = (
            boto3.Session(
                aws_access_key_id=keys[name]["AccessKeyId"],
                aws_secret_access_key=keys[name]["SecretAccessKey"],
                region_name=REGION,
            )
            for name in ("admin", "role")
        )
        # From here on every request is authenticated and authorised.
        with pytest.raises(ClientError, match="AccessDenied"):
            user.client("s3", endpoint_url=endpoint).list_buckets()
        admin.client("s3", endpoint_url=endpoint).list_buckets()
        yield Server(endpoint, admin, user)
    finally:
        reset_auth(endpoint, previous)
        motoserver.stop()


def test_the_server_enforces_iam_on_s3_keys(server: Server) -> None:
    """The ground this file stands on: a user with GetObject on one prefix reads there and
    is denied elsewhere, on this server."""
    s3 = server.client("s3")
    s3.create_bucket(Bucket="ground")
    for key in ("a/x", "b/x"):
        s3.put_object(Bucket="ground", Key=key, Body=b"1")
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::ground/a/*"}
        ],
    }
    server.client("iam").put_user_policy(
        UserName="role", PolicyName="role", PolicyDocument=json.dumps(policy)
    )
    mine = server.user.client("s3", endpoint_url=server.endpoint)
    assert mine.get_object(Bucket="ground", Key="a/x")["Body"].read() == b"1"
    with pytest.raises(ClientError, match="AccessDenied"):
        mine.get_object(Bucket="ground", Key="b/x")


# ------------------------------------------------------------------------ running a handler


class Echo(Target):
    """The target (outside the stack): answers from the case's own context."""

    kind = "lambdaArn"

    @property
    def name(self) -> str:
        return "hr-assistant"

    def invoke(self, case: Any) -> TargetResponse:
        return TargetResponse(answer="25 days.", contexts=["Staff get 25 days of annual leave."])


def lambda_context(name: str) -> SimpleNamespace:
    return SimpleNamespace(
        function_name=name,
        function_version="$LATEST",
        invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}",
        memory_limit_in_mb=1024,
        aws_request_id="r-1",
        get_remaining_time_in_millis=lambda: 900_000,
    )


@contextmanager
def signed_in(server: Server, session: boto3.Session, env: dict[str, str]) -> Iterator[list[Call]]:
    """boto3's default session is ``session`` (every client a handler makes signs with its
    keys and reaches the server), the process has the function's environment, and every
    call is recorded with its parameters and error code."""
    calls: list[Call] = []

    def before(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        context["least_privilege"] = Call(
            model.service_model.service_name, model.name, dict(params)
        )

    def after(parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        call = context.get("least_privilege")
        if call is not None:
            call.error = parsed.get("Error", {}).get("Code")
            calls.append(call)

    session.events.register("before-parameter-build", before)
    session.events.register("after-call", after)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(boto3, "DEFAULT_SESSION", session)
            for name in (
                "AWS_PROFILE",
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
            ):
                patch.delenv(name, raising=False)
            patch.setenv("AWS_ENDPOINT_URL", server.endpoint)
            patch.setenv("AWS_DEFAULT_REGION", REGION)
            for name, value in env.items():
                patch.setenv(name, value)
            yield calls
    finally:
        session.events.unregister("before-parameter-build", before)
        session.events.unregister("after-call", after)


def judge_spec(stub: JudgeStub) -> dict[str, Any]:
    # no cache_dir: the judge caches in the run bucket's judge-cache/, as deployed
    return {"openai": {"base_url": stub.url, "model": "stub-judge"}, "max_retries": 0}


def run_event(stub: JudgeStub) -> dict[str, Any]:
    return {
        "key": SUITE_KEY,
        "iterations": 1,
        # sends the contexts, so misinformation may falsify one (Prepare has the judge do it)
        "target": {"openai": {"base_url": stub.url, "model": "gen", "send_contexts": "user"}},
        "metrics": ["Answer Relevancy", "BERT Score"],
        "perturbations": [{"kind": "misinformation"}],
        "judge": judge_spec(stub),
        "run_id": RUN_ID,
    }


def runtime() -> Runtime:
    return Runtime(target_factory=lambda spec, *, session: Echo(spec))


#: Each role's work, in pipeline order: (role prefix, handler call).
Step = Callable[[str, JudgeStub], Any]


def red_team_event(stub: JudgeStub, run_id: str) -> dict[str, Any]:
    """A run event's red team: Prepare has the judge write the attacks and stores them
    under runs/redteam/, where the next run of the event reads them back."""
    return {
        "key": SUITE_KEY,
        "iterations": 1,
        "target": {"url": stub.url + "/ask"},
        "judge": judge_spec(stub),
        "redteam": {"purpose": "an HR assistant", "plugins": ["prompt-injection"], "num_tests": 1},
        "run_id": run_id,
    }


def do_prepare(bucket: str, stub: JudgeStub) -> Any:
    handler = prepare.build(runtime())
    result = handler({"event": run_event(stub)}, lambda_context("Prepare"))
    # (the grader joins the catalog for the red team's runs only, as in a Lambda container)
    with restored_catalog("evalrunner.redteam.grader"):
        for n in (1, 2):  # writes the attacks, then reads them back
            event = red_team_event(stub, f"iam-redteam-{n}")
            handler({"event": event}, lambda_context("Prepare"))
    return result


def do_run_case(bucket: str, stub: JudgeStub) -> Any:
    # the first case only: the second is left without a record, as a failed task leaves it
    event = {"run_id": RUN_ID, "bucket": bucket, "item": {"first": 0, "count": 1}}
    return run_case.build(runtime())(event, lambda_context("RunCase"))


def do_score(bucket: str, stub: JudgeStub) -> Any:
    return score.build(runtime())({"run_id": RUN_ID, "bucket": bucket}, lambda_context("Score"))


def do_aggregate(bucket: str, stub: JudgeStub) -> Any:
    event = {"state": {"run_id": RUN_ID, "bucket": bucket}}
    return aggregate.build(runtime())(event, lambda_context("Aggregate"))


def do_upload(bucket: str, stub: JudgeStub) -> Any:
    """A suite whose sidecar makes a good run (started; an earlier rejection is deleted),
    and one that cannot run (its rejection written)."""
    handler = start_from_upload.handler
    good = handler({"bucket": bucket, "key": SUITE_KEY, "token": "t1"}, lambda_context("Up"))
    bad = handler({"bucket": bucket, "key": BAD_KEY}, lambda_context("Up"))
    return [good, bad]


#: The production monitor's schedule input (cdk.json ``monitor``: ``{"name", **event}``),
#: every interaction sampled so that a run starts on the few log records here.
MONITOR_EVENT = {"name": MONITOR["name"], **MONITOR["event"], "sample": "100%"}
#: Bedrock invocation logs under the monitor's source prefix.
MONITOR_LOGS = Path(__file__).parents[2] / "test_suites" / "monitor" / "bedrock-invocations.json.gz"
LOG_KEY = "2026/11/27/00/invocations.json.gz"
#: A body Bedrock stored apart (over 100 KB) under cdk.json ``monitor.large_bodies``.
LARGE_BODY = MONITOR["large_bodies"] + "2026/11/27/00/big-request_output.json.gz"


def monitor_logs() -> bytes:
    """The sample invocation logs and one more record whose answer Bedrock stored apart."""
    lines = gzip.decompress(MONITOR_LOGS.read_bytes()).decode("utf-8").splitlines()
    big = json.loads(lines[0])
    big["requestId"] = "big-request"
    big["output"] = {"outputBodyS3Path": LARGE_BODY}
    return gzip.compress("\n".join([*lines, json.dumps(big)]).encode("utf-8"))


def large_body() -> bytes:
    answer = json.loads(gzip.decompress(MONITOR_LOGS.read_bytes()).splitlines()[0])["output"]
    return gzip.compress(json.dumps(answer["outputBodyJson"]).encode("utf-8"))


def do_monitor(bucket: str, stub: JudgeStub) -> Any:
    """The scheduled monitor: reads the source prefix, its watermark (none yet), writes its
    suite, starts the test runner, moves the watermark; then the next schedule, which looks
    at the run it started (still running) and finds nothing new. The first reply is the
    result."""
    handler = monitor.build(runtime())
    first = handler(dict(MONITOR_EVENT), lambda_context("Monitor"))
    second = handler(dict(MONITOR_EVENT), lambda_context("Monitor"))
    assert second["status"] == "nothing_new" and second["in_flight"] == 1, second
    return first


#: The workflow's inputs, under the one prefix its role reads them from.
WORKFLOW_SUITE = "workflow-inputs/iam.csv"
#: The workflow state machine's executions (the stack names it <stack>-workflow).
WORKFLOW_EXECUTIONS = f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{MAIN}-workflow:"


def do_workflow(bucket: str, stub: JudgeStub) -> Any:
    """The workflow state machine's tasks, as it runs them: begin (reads the suite under
    workflow-inputs/), the evaluate and red-team steps (each writes its run's suite under
    test-suites/_workflow/, the red team's attacks written by the judge through judge-cache/,
    starts the test runner, describes the run until it ends, copies its reports from
    test-reports/), weak spots, the artifacts, the report; its state under workflows/."""
    handler = workflow.build(runtime())
    context = lambda_context("Workflow")
    event = {
        "workflow_id": "iam",
        "target": {"url": stub.url + "/ask"},
        "judge": judge_spec(stub),
        "suite": WORKFLOW_SUITE,
        "metrics": ["Rouge Metric"],
        "perturbations": [],
        # the judge writes the attacks (through judge-cache/); their run is the seed's
        "redteam": {"purpose": "an HR assistant", "plugins": ["off-topic"], "num_tests": 1},
        "wait_seconds": 0,
    }
    general, stub.responder = stub.responder, WorkflowJudge()  # it writes attacks, artifacts
    try:
        # begun twice: the second finds the workflow held by an execution that no longer
        # runs (the server knows none by that name) and takes it over
        for execution in ("first", "second"):
            arn = f"{WORKFLOW_EXECUTIONS}{execution}"
            begun = handler({"action": "begin", "event": event, "execution": arn}, context)
        for step in ("evaluate", "redteam", "weak-spots", "artifacts"):
            task = {"workflow_id": begun["workflow_id"], "step": step}
            state = handler({"action": "step", **task}, context)
            deadline = time.monotonic() + 30
            while state["status"] == "running":
                assert time.monotonic() < deadline, state
                time.sleep(0.05)
                check = {"action": "check", "execution": state["execution"], **task}
                state = handler(check, context)
    finally:
        stub.responder = general
    return handler({"action": "report", "workflow_id": "iam"}, context)


PIPELINE: list[tuple[str, Step]] = [
    ("PrepareRole", do_prepare),
    ("RunCaseRole", do_run_case),
    ("ScoreRole", do_score),
    ("AggregateRole", do_aggregate),
    ("StartFromUploadRole", do_upload),
    ("MonitorRole", do_monitor),
    ("WorkflowRole", do_workflow),
]


@dataclass
class Proof:
    server: Server
    template: dict[str, Any]
    stub: JudgeStub
    topic_arn: str
    state_machine_arn: str
    seeds: dict[str, str] = field(default_factory=dict)
    #: The run Aggregate finished in the seed: what the test runner's execution outputs
    #: when the workflow starts it.
    summary: dict[str, Any] = field(default_factory=dict)

    def local(self) -> Local:
        n = next(self.server.buckets)
        return Local(
            self.server.endpoint,
            bucket=f"iam-proof-{n}",
            topic_arn=self.topic_arn,
            state_machine_arn=self.state_machine_arn,
        )

    def run(self, role: str, without: Grant | None = None) -> tuple[Any, list[Call], Local]:
        """A fresh bucket with what the steps before ``role``'s left there (done by the
        admin), then ``role``'s step as the user with its policy (``without`` one grant)."""
        local = self.local()
        s3 = self.server.client("s3")
        s3.create_bucket(Bucket=local.bucket)
        seed = self.seed(role)
        for entry in s3.list_objects_v2(Bucket=seed).get("Contents", []):
            source = {"Bucket": seed, "Key": entry["Key"]}
            s3.copy_object(Bucket=local.bucket, Key=entry["Key"], CopySource=source)
        policies = role_policies(self.template)
        logical_id = self.logical_id(role)
        env = self.env(role, local)
        document = policies[logical_id].document(local, without)
        moto_document = copy.deepcopy(document)
        for statement in moto_document["Statement"]:
            if not statement["Action"].startswith("s3:"):
                statement["Resource"] = "*"  # moto checks these services' calls against "*"
        self.server.client("iam").put_user_policy(
            UserName="role", PolicyName="role", PolicyDocument=json.dumps(moto_document)
        )
        step = dict(PIPELINE)[role]
        with (
            self.runner_executing(role),
            signed_in(self.server, self.server.user, env) as calls,
        ):
            try:
                result: Any = step(local.bucket, self.stub)
            except Exception as exc:  # a denied call the handler does not survive
                result = exc
        for call in calls:  # the ARN a non-S3 call named, against the template's statement
            if (call.service, call.operation, call.error) == ("s3", "ListObjectsV2", None):
                bucket, prefix = call.params["Bucket"], call.params.get("Prefix", "")
                if not policies[logical_id].may_list(local, without, bucket, prefix):
                    call.error = f"AccessDenied listing {bucket}/{prefix} (checked here)"
            # (a call the server answered, even "does not exist", was checked against "*")
            if call.service != "s3" and not (call.error or "").startswith("AccessDenied"):
                arn = resource_of(call)
                action = f"{ACTION_PREFIX.get(call.service, call.service)}:{call.operation}"
                verdict = IAMPolicy(json.dumps(document)).is_action_permitted(action, arn)
                if verdict is not PermissionResult.PERMITTED:
                    call.error = f"AccessDenied on {arn} (checked here: moto checks '*')"
        return result, calls, local

    @contextmanager
    def runner_executing(self, role: str) -> Iterator[None]:
        """For the workflow's role: the server's Step Functions executes (moto's
        ``/moto-api/config``), and the test runner is a state machine that ends with the
        seed's run summary as its output, as a finished run's execution does; the other
        roles' starts are only recorded, as before."""
        if role != "WorkflowRole":
            yield
            return
        config = f"{self.server.endpoint}/moto-api/config"
        requests.post(config, json={"stepfunctions": {"execute_state_machine": True}}, timeout=10)
        try:
            sfn = self.server.client("stepfunctions")
            definition = json.dumps(
                {
                    "StartAt": "Run",
                    "States": {"Run": {"Type": "Pass", "Result": self.summary, "End": True}},
                }
            )
            try:
                sfn.describe_state_machine(stateMachineArn=self.state_machine_arn)
            except ClientError:
                sfn.create_state_machine(
                    name=self.state_machine_arn.rsplit(":", 1)[1],
                    definition=definition,
                    roleArn=f"arn:aws:iam::{ACCOUNT}:role/evalrunner-state-machine",
                )
            yield
        finally:
            requests.post(
                config, json={"stepfunctions": {"execute_state_machine": False}}, timeout=10
            )

    def logical_id(self, role: str) -> str:
        (logical_id,) = [k for k in role_policies(self.template) if k.startswith(role)]
        return logical_id

    def env(self, role: str, local: Local) -> dict[str, str]:
        env = function_env(self.template, self.logical_id(role), local)
        # the judge is a loopback server: the deployed network policy refuses internal URLs
        env[ENV_NETWORK_POLICY] = json.dumps({"enforce": True, "allow_internal_addresses": True})
        return env

    def seed(self, role: str) -> str:
        """A bucket holding what the steps before ``role``'s leave (made once per role by
        the admin): each run starts from a copy, so none finds another's writes."""
        if role not in self.seeds:
            local = self.local()
            s3 = self.server.client("s3")
            s3.create_bucket(Bucket=local.bucket)
            s3.put_object(Bucket=local.bucket, Key=SUITE_KEY, Body=SUITE.encode())
            sidecar = {"target": {"url": self.stub.url + "/ask"}, "iterations": 1}
            s3.put_object(Bucket=local.bucket, Key=SIDECAR_KEY, Body=json.dumps(sidecar).encode())
            s3.put_object(Bucket=local.bucket, Key=BAD_KEY, Body=b"no,such\ncolumns,here\n")
            s3.put_object(Bucket=local.bucket, Key=OLD_REJECTION, Body=b"{}")
            s3.put_object(Bucket=local.bucket, Key=WORKFLOW_SUITE, Body=SUITE.encode())
            for earlier, step in PIPELINE:
                if earlier == role:
                    break
                with signed_in(self.server, self.server.admin, self.env(earlier, local)):
                    done = step(local.bucket, self.stub)
                if earlier == "AggregateRole":
                    self.summary = done
            self.seeds[role] = local.bucket
        return self.seeds[role]


SIDECAR_KEY = "test-suites/iam.run.json"
BAD_KEY = "test-suites/bad.csv"
#: An earlier upload of the suite was rejected: a good upload deletes the rejection.
OLD_REJECTION = "test-reports/_rejected/iam.csv.json"

ACTION_PREFIX = {"stepfunctions": "states"}
RESOURCE_PARAMS = {
    ("sns", "Publish"): "TopicArn",
    ("stepfunctions", "StartExecution"): "stateMachineArn",
    ("stepfunctions", "DescribeExecution"): "executionArn",
}


def resource_of(call: Call) -> str:
    name = RESOURCE_PARAMS.get((call.service, call.operation))
    assert name is not None, (
        f"{call.service}:{call.operation}: add the parameter naming its resource"
    )
    return str(call.params[name])


@pytest.fixture(scope="module")
def proof(server: Server, synth) -> Iterator[Proof]:
    sns = server.client("sns")
    topic = sns.create_topic(Name="evalrunner-summary")["TopicArn"]
    # the upload function starts the test runner by the ARN the stack builds from its name
    template = synth.templates[MAIN]
    (upload_role,) = [r for r in role_policies(template) if r.startswith("StartFromUploadRole")]
    env = function_env(template, upload_role, Local(server.endpoint))
    name = env["EVALRUNNER_STATE_MACHINE_ARN"].rsplit(":", 1)[1]
    sfn = server.client("stepfunctions")
    machine = sfn.create_state_machine(
        name=name,
        definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/evalrunner-state-machine",
    )["stateMachineArn"]
    # the monitor's log source: another bucket, which the monitor only reads (the schedule
    # passes the cdk.json monitor's name and event)
    (monitor_role,) = [r for r in role_policies(template) if r.startswith("MonitorRole")]
    monitor_env = function_env(template, monitor_role, Local(server.endpoint))
    assert monitor_env["EVALRUNNER_STATE_MACHINE_ARN"] == machine, monitor_env
    (schedule,) = [
        r
        for k, r in template["Resources"].items()
        if r["Type"] == "AWS::Scheduler::Schedule" and k.startswith("MonitorSchedule")
    ]
    assert json.loads(schedule["Properties"]["Target"]["Input"]) == {
        **MONITOR_EVENT,
        "sample": MONITOR["event"]["sample"],
    }
    source_bucket, prefix = monitor_env["EVALRUNNER_MONITOR_SOURCE"][5:].split("/", 1)
    s3 = server.client("s3")
    s3.create_bucket(Bucket=source_bucket)
    s3.put_object(Bucket=source_bucket, Key=prefix + LOG_KEY, Body=monitor_logs())
    large_bucket, large_key = LARGE_BODY[5:].split("/", 1)
    assert large_bucket == source_bucket and not large_key.startswith(prefix)
    s3.put_object(Bucket=large_bucket, Key=large_key, Body=large_body())
    with JudgeStub() as stub:
        stub.responder = Judges()
        yield Proof(server, template, stub, topic, machine)


class Judges:
    """The judge stub's answers: the red team's writing by its scripted judge, the rest
    (misinformation, grading) by the local model."""

    def __init__(self) -> None:
        self.local = LocalModel()
        self.redteam = RedTeamJudge()

    def __call__(self, messages: list[dict[str, Any]], request: dict[str, Any]) -> Any:
        writing = "Write exactly" in messages[-1]["content"]
        return (self.redteam if writing else self.local)(messages, request)


def denied(calls: list[Call]) -> list[Call]:
    return [
        c
        for c in calls
        if c.error is not None and (c.error.startswith("AccessDenied") or c.error == "403")
    ]


def check_work(role: str, result: Any, calls: list[Call]) -> None:
    """What each handler must have done with its whole policy."""
    assert not isinstance(result, Exception), result
    if role in ("PrepareRole", "RunCaseRole"):  # the roles that judge use the cache
        memory = "judge-cache/endpoint-"  # the endpoint's structured-output mode, beside it
        cache = {
            (c.operation, c.error)
            for c in calls
            if c.params.get("Key", "").startswith("judge-cache/")
            and not c.params.get("Key", "").startswith(memory)
        }
        assert cache == {("GetObject", "NoSuchKey"), ("PutObject", None)}, cache
        remembered = {
            (c.operation, c.error) for c in calls if c.params.get("Key", "").startswith(memory)
        }
        # read at the start (found or not); written when the judge stepped to another mode
        assert ("GetObject", None) in remembered or ("GetObject", "NoSuchKey") in remembered
        assert remembered <= {("GetObject", None), ("GetObject", "NoSuchKey"), ("PutObject", None)}
    if role == "PrepareRole":
        assert result["item_count"] == 4  # 2 cases, each also misinformed
        attacks = [
            (c.operation, c.error)
            for c in calls
            if c.params.get("Key", "").startswith(ATTACKS_PREFIX)
        ]  # the red team's second run read back what the first stored
        assert attacks == [("GetObject", "NoSuchKey"), ("PutObject", None), ("GetObject", None)]
    elif role == "RunCaseRole":
        assert result == {"done": 1, "errors": 0, "remaining": None}
    elif role == "ScoreRole":
        assert result["evaluators"] == ["BERT Score"]
    elif role == "MonitorRole":
        assert result["status"] == "started" and result["scored"] == result["new"] > 0, result
        done = {(c.service, c.operation, c.error) for c in calls}
        assert ("stepfunctions", "StartExecution", None) in done
        assert ("stepfunctions", "DescribeExecution", None) in done  # the run followed
        written = {c.params["Key"] for c in calls if c.operation == "PutObject" and not c.error}
        assert written == {result["key"], f"monitor/{MONITOR['name']}/watermark.json"}, written
        # the answer Bedrock stored apart was read, and its record scored with the others
        body = LARGE_BODY[5:].split("/", 1)[1]
        assert ("GetObject", None) in {
            (c.operation, c.error) for c in calls if c.params.get("Key") == body
        }
        assert result["problems"] == [] and result["scored"] == 5, result
    elif role == "WorkflowRole":
        assert result["steps"]["evaluate"] == result["steps"]["artifacts"] == "done", result
        done = {(c.service, c.operation, c.error) for c in calls}
        assert {
            ("stepfunctions", "StartExecution", None),
            ("stepfunctions", "DescribeExecution", None),
        } <= done
        ok = {(c.operation, c.params.get("Key", "").split("/")[0]) for c in calls if not c.error}
        # the run's reports copied in; the judge's replies cached; the state written
        assert {
            ("GetObject", "test-reports"),
            ("PutObject", "judge-cache"),
            ("PutObject", "workflows"),
            ("PutObject", "test-suites"),
        } <= ok, ok
    elif role == "AggregateRole":
        assert result["cases"] == 2 and ("sns", "Publish") in {
            (c.service, c.operation) for c in calls
        }
    else:
        assert [r["status"] for r in result] == ["started", "rejected"]
        assert ("s3", "DeleteObject", None) in {(c.service, c.operation, c.error) for c in calls}


ROLES = [role for role, _ in PIPELINE]


@pytest.mark.parametrize("role", ROLES)
def test_the_role_may_make_every_call_its_handler_makes(proof: Proof, role: str) -> None:
    result, calls, _ = proof.run(role)
    assert not denied(calls), denied(calls)
    check_work(role, result, calls)


@pytest.mark.parametrize("role", ROLES)
def test_every_grant_of_the_role_is_needed(proof: Proof, role: str) -> None:
    """Each grant (statement x action x resource) removed in turn: some call is denied.
    Grants for calls no handler makes are the listed ones, each with its reason."""
    policy = role_policies(proof.template)[proof.logical_id(role)]
    _, whole, _ = proof.run(role)
    # S3 answers a read of a missing key with 403 instead of 404 unless the caller may list
    # the bucket (moto answers 404 either way): a handler that reads a key that may not exist
    # (a case without a record, a suite without a sidecar) needs s3:ListBucket for that.
    reads_missing = [
        c for c in whole if c.service == "s3" and c.error in ("NoSuchKey", "404", "NotFound")
    ]
    unused, skipped = [], []
    for grant in policy.grants():
        statement = policy.statements[grant.statement]
        if exempt(statement, grant.action):
            skipped.append((statement.get("Sid"), grant.action))
            continue
        if grant.action == "s3:ListBucket" and reads_missing:
            continue
        _, calls, _ = proof.run(role, without=grant)
        if not denied(calls):
            unused.append(f"{grant.action} on {grant.resource}")
    assert not unused, f"{role}: grants no call needs: {unused}"
    # every function writes logs and traces; the roles that judge may call Bedrock; only the
    # run-case role calls targets and reads secrets; Aggregate publishes to the KMS topic
    assert {a.split(":")[0] for _, a in skipped} >= {"logs", "xray"}
    allowed = MAY_SKIP.get(role, ("logs:", "xray:"))
    assert all(a.startswith(allowed) for _, a in skipped), skipped
