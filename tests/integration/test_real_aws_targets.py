"""Inside the embedded engine, a real AWS target is called for real: its requests bypass moto
while S3 and Step Functions stay embedded. A before-send hook stands in for AWS itself."""

from __future__ import annotations

import json

import boto3
from botocore.awsrequest import AWSResponse
from moto.core.botocore_stubber import MockRawResponse

from evalrunner.engine import LocalEngine
from evalrunner.engine.real_aws import needs_real_aws, real_session
from lambdas.local import local_pipeline

REMOTE = "arn:aws:lambda:eu-west-1:210987654321:function:prod-rag"


class FakeAWS:
    """Answers Lambda Invoke the way the service does; records what reached it."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def __call__(self, request, **kwargs):
        self.requests.append(request.url)
        body = json.loads(request.body)
        payload = json.dumps(
            {
                "statusCode": 200,
                "body": json.dumps(
                    {"answer": f"remote says: {body['question']}", "citations": [{"text": "c1"}]}
                ),
            }
        )
        return AWSResponse(
            request.url, 200, {"content-type": "application/json"}, MockRawResponse(payload)
        )


def session_with(fake: FakeAWS) -> boto3.Session:
    base = boto3.Session(
        aws_access_key_id="AKIAREALKEY",
        aws_secret_access_key="real-secret",
        region_name="eu-west-1",
    )
    session = real_session(base)
    session.events.register("before-send.lambda.Invoke", fake)
    return session


def test_which_targets_need_real_aws():
    local = {"evalrunner-demo-hr"}
    assert needs_real_aws({"lambdaArn": REMOTE}, local)
    assert needs_real_aws({"agentId": "ABCDEFGHIJ", "agentAliasId": "TSTALIASID"}, local)
    assert not needs_real_aws({"lambdaArn": "evalrunner-demo-hr"}, local)
    assert not needs_real_aws({"url": "http://127.0.0.1:9/x"}, local)


def test_real_session_keeps_credentials_resolved_before_the_mock():
    session = session_with(FakeAWS())
    frozen = session.get_credentials().get_frozen_credentials()
    assert frozen.access_key == "AKIAREALKEY"


def test_engine_calls_the_real_target_and_keeps_s3_embedded(tmp_path):
    fake = FakeAWS()
    engine = LocalEngine(pipeline=local_pipeline, aws_session=session_with(fake))
    suite = b"question,expected_answer\nWhat is up?,remote says: What is up?\n"
    result = engine.run(
        {
            "key": "test-suites/r.csv",
            "iterations": 1,
            "target": {"lambdaArn": REMOTE},
            "metrics": ["Exact match"],
        },
        suite=suite,
        out_dir=tmp_path,
    )
    assert len(fake.requests) == 1
    assert fake.requests[0].startswith("https://lambda.eu-west-1.amazonaws.com/")
    (em,) = result.summary.metrics
    assert em.average == 1.0 and result.summary.target == "prod-rag"
    # the run's own bucket never left the embedded engine
    assert result.files and all(p.is_file() for p in result.files)
