"""The deployed monitor masking personal names: the function reads its options (an NER
model's folder among them, as the stack sets EVALRUNNER_MONITOR_PII from cdk.json) and the
suite it writes to the bucket holds no name, no address and no e-mail (moto's S3 and Step
Functions; the model is a small spaCy pipeline saved to a folder here)."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import boto3
import pytest
import spacy
from moto import mock_aws

from evalrunner.errors import ConfigError
from evalrunner.monitor.deployed import ENV_SOURCE, ENV_STATE_MACHINE
from evalrunner.pipeline.context import Runtime, Settings
from evalrunner.privacy import ENV_PII
from evalrunner.privacy_names import load_pipeline
from lambdas import monitor

SAMPLE = Path(__file__).parents[3] / "test_suites" / "monitor" / "bedrock-invocations.json.gz"
QUESTION = "I am Jane Doe of 10 Downing Street, London SW1A 2AA; mail jane(at)corp.io"


def context() -> SimpleNamespace:
    return SimpleNamespace(
        function_name="evalrunner-monitor",
        function_version="$LATEST",
        invoked_function_arn="arn:aws:lambda:us-east-1:123456789012:function:evalrunner-monitor",
        memory_limit_in_mb=3008,
        aws_request_id="r-1",
        get_remaining_time_in_millis=lambda: 900_000,
    )


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[SimpleNamespace]:
    load_pipeline.cache_clear()
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    ruler.add_patterns([{"label": "PERSON", "pattern": [{"LOWER": "jane"}, {"LOWER": "doe"}]}])  # type: ignore[attr-defined]
    nlp.to_disk(tmp_path / "ner-model")
    record = json.loads(gzip.decompress(SAMPLE.read_bytes()).decode().splitlines()[0])
    record["input"]["inputBodyJson"]["messages"][0]["content"][0]["text"] = QUESTION
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="runner-bucket")
        s3.create_bucket(Bucket="model-logs")
        body = gzip.compress(json.dumps(record).encode())
        s3.put_object(Bucket="model-logs", Key="logs/part.json.gz", Body=body)
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        arn = sfn.create_state_machine(
            name="evalrunner",
            definition=json.dumps({"StartAt": "Done", "States": {"Done": {"Type": "Succeed"}}}),
            roleArn="arn:aws:iam::123456789012:role/evalrunner-sfn",
        )["stateMachineArn"]
        monkeypatch.setenv(ENV_STATE_MACHINE, arn)
        monkeypatch.setenv(ENV_SOURCE, "s3://model-logs/logs/")
        runtime = Runtime(
            s3_client=s3, settings=Settings(bucket="runner-bucket", region="us-east-1")
        )
        yield SimpleNamespace(
            s3=s3, model=str(tmp_path / "ner-model"), handler=monitor.build(runtime)
        )


def test_the_deployed_suite_has_names_addresses_and_mails_masked(
    aws: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"kinds": ["EMAIL", "ADDRESS", "PERSON"], "ner_model": aws.model}
    monkeypatch.setenv(ENV_PII, json.dumps(options))
    reply = aws.handler({"name": "names"}, context())
    body = aws.s3.get_object(Bucket="runner-bucket", Key=reply["key"])["Body"].read().decode()
    (row,) = json.loads(body)
    assert row["question"] == "I am <PERSON_1> of <ADDRESS_1>; mail <EMAIL_1>"
    assert row["pii_masked"] == "1 ADDRESS, 1 EMAIL, 1 PERSON"
    assert not [s for s in ("Jane", "Downing", "SW1A", "corp.io") if s in body]
    # a second schedule in the same warm function uses the model already loaded
    aws.handler({"name": "names-again"}, context())
    assert load_pipeline.cache_info().misses == 1


def test_a_deployment_without_its_model_fails_the_invocation_not_silently(
    aws: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"kinds": ["PERSON"], "ner_model": "/var/task/ner-model-missing"}
    monkeypatch.setenv(ENV_PII, json.dumps(options))
    with pytest.raises(ConfigError, match="could not be loaded"):
        aws.handler({"name": "names"}, context())
    assert "Contents" not in aws.s3.list_objects_v2(Bucket="runner-bucket")
