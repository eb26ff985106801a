"""The viewer over a bucket prefix (the deployed runner's bucket), with moto's S3 standing in
for AWS: runs listed and opened from the objects under the prefix only, labels written back
beside the run in the bucket, and no key outside the prefix reachable."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from starlette.testclient import TestClient

from evalrunner.viewer.app import create_app
from evalrunner.viewer.source import S3Source, UnsafeKey, open_source

BUCKET = "runner-bucket"
TOKEN = "s3-token"


@pytest.fixture
def s3(runs_folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        for path in runs_folder.glob("test-reports/evalrunner-demo-hr/*"):
            key = f"team-a/{path.relative_to(runs_folder).as_posix()}"
            client.put_object(Bucket=BUCKET, Key=key, Body=path.read_bytes())
        # another team's run beside the prefix: never listed, never reachable
        other = next(runs_folder.glob("test-reports/hostile*/*-summary.json"))
        client.put_object(Bucket=BUCKET, Key="team-b/x-summary.json", Body=other.read_bytes())
        client.put_object(Bucket=BUCKET, Key="secret.txt", Body=b"top secret")
        yield client


def test_runs_under_the_prefix_are_served_and_labels_go_back_to_the_bucket(s3: Any) -> None:
    source = open_source(f"s3://{BUCKET}/team-a")
    assert isinstance(source, S3Source)
    client = TestClient(create_app(source, token=TOKEN), base_url="http://127.0.0.1")
    page = client.get("/")
    assert page.status_code == 200
    assert page.text.count('class="run-link"') == 2
    assert "hostile" not in page.text
    run_id = page.text.split('class="run-link" href="/runs/')[1].split('"')[0]
    assert client.get(f"/runs/{run_id}").status_code == 200
    assert client.get(f"/runs/{run_id}/cases/0").status_code == 200
    answer = client.post(
        f"/runs/{run_id}/labels",
        data={"token": TOKEN, "n": "0", "metric": "ROUGE-L", "verdict": "fail", "note": "n"},
        follow_redirects=False,
    )
    assert answer.status_code == 303
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]]
    (labels,) = [k for k in keys if k.endswith("labels.csv")]
    assert labels.startswith("team-a/test-reports/evalrunner-demo-hr/")
    body = s3.get_object(Bucket=BUCKET, Key=labels)["Body"].read().decode()
    assert body.splitlines()[1].endswith(",fail,n")
    assert client.get(f"/runs/{run_id}/export.zip").headers["content-type"] == "application/zip"


def test_keys_cannot_leave_the_prefix(s3: Any) -> None:
    source = S3Source.of(f"s3://{BUCKET}/team-a", client=s3)
    for key in ("../secret.txt", "/secret.txt", "a/../../secret.txt", "..\\secret.txt"):
        with pytest.raises(UnsafeKey):
            source.read(key)
    with pytest.raises(UnsafeKey):
        source.exists("../secret.txt")


def test_a_url_without_a_bucket_is_refused() -> None:
    from evalrunner.errors import StorageError

    with pytest.raises(StorageError, match="s3://bucket"):
        open_source("s3://")
