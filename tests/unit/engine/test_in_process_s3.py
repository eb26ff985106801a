"""The local engine's S3 seam (issue 18): a run's storage reaches moto's S3 backend without
botocore, and nothing can tell: bytes, content types, missing keys and buckets, conditional
writes and paginated listings are what a boto3 client against the same mock gives, and each
side reads what the other wrote."""

from __future__ import annotations

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.s3.responses import S3Response

from evalrunner.engine.moto_compat import InProcessS3Client
from evalrunner.errors import StorageError
from evalrunner.storage import RunStore

BUCKET = "seam-bucket"
ACCOUNT = "123456789012"


@pytest.fixture
def clients():
    """The seam and a boto3 client over one mock, with the bucket made through boto3."""
    with mock_aws():
        boto = boto3.client("s3", region_name="us-east-1")
        boto.create_bucket(Bucket=BUCKET)
        seam = InProcessS3Client(
            lambda: boto3.client("s3", region_name="us-east-1"), account_id=ACCOUNT
        )
        yield seam, boto


@pytest.fixture
def http_calls(monkeypatch):
    """The S3 operations that reached moto's HTTP layer, as (operation, key)."""
    seen: list[tuple[str, str]] = []
    for name in ("put_object", "get_object", "list_objects_v2"):
        original = getattr(S3Response, name)

        def counted(self, _original=original, _name=name):
            seen.append((_name, self.parse_key_name() if _name != "list_objects_v2" else ""))
            return _original(self)

        monkeypatch.setattr(S3Response, name, counted)
    return seen


BODY = "Ünïcode ✓ and raw bytes \x00\xff".encode() + bytes(range(256))


def test_objects_cross_between_the_seam_and_boto3(clients, http_calls):
    seam, boto = clients
    seam.put_object(Bucket=BUCKET, Key="a/seam.json", Body=BODY, ContentType="application/json")
    boto.put_object(Bucket=BUCKET, Key="a/boto.txt", Body=BODY, ContentType="text/plain")
    assert http_calls == [("put_object", "a/boto.txt")]  # the seam's put never went there

    through_boto = boto.get_object(Bucket=BUCKET, Key="a/seam.json")
    assert through_boto["Body"].read() == BODY
    assert through_boto["ContentType"] == "application/json"
    through_seam = seam.get_object(Bucket=BUCKET, Key="a/boto.txt")
    assert through_seam["Body"].read() == BODY
    assert through_seam["ContentType"] == "text/plain"
    assert through_seam["ETag"] == boto.head_object(Bucket=BUCKET, Key="a/boto.txt")["ETag"]
    assert [op for op, _ in http_calls] == ["put_object", "get_object"]  # boto's get only


def test_a_missing_key_or_bucket_is_the_error_botocore_raises(clients):
    seam, boto = clients
    for client in (seam, boto):
        with pytest.raises(ClientError) as missing:
            client.get_object(Bucket=BUCKET, Key="nope.json")
        assert missing.value.response["Error"]["Code"] == "NoSuchKey"
        with pytest.raises(ClientError) as no_bucket:
            client.get_object(Bucket="no-such-bucket", Key="k")
        assert no_bucket.value.response["Error"]["Code"] == "NoSuchBucket"
    store = RunStore(BUCKET, client=seam)
    assert store.get_json_or_none("nope.json") is None
    with pytest.raises(StorageError, match="does not exist; upload it first"):
        store.get_bytes("nope.json")
    with pytest.raises(StorageError, match="bucket 'no-such-bucket' does not exist"):
        RunStore("no-such-bucket", client=seam).get_bytes("k")


def test_a_conditional_put_creates_once(clients):
    seam, boto = clients
    store = RunStore(BUCKET, client=seam)
    assert store.put_if_absent("claim", b"first", "text/plain") is True
    assert store.put_if_absent("claim", b"second", "text/plain") is False
    boto.put_object(Bucket=BUCKET, Key="claimed-by-boto", Body=b"x")
    assert store.put_if_absent("claimed-by-boto", b"y", "text/plain") is False
    assert boto.get_object(Bucket=BUCKET, Key="claim")["Body"].read() == b"first"


def test_listing_pages_and_prefixes_match_boto3(clients, http_calls):
    """More keys than one page (1,000) under the prefix, some beside it: the seam's pages
    and RunStore.list_keys give what boto3's paginator gives."""
    seam, boto = clients
    for i in range(1003):
        seam.put_object(Bucket=BUCKET, Key=f"runs/r/cases/{i:05d}.json", Body=b"{}")
    seam.put_object(Bucket=BUCKET, Key="runs/r/run.json", Body=b"{}")
    boto.put_object(Bucket=BUCKET, Key="runs/r/cases/zz-boto.json", Body=b"{}")
    boto.put_object(Bucket=BUCKET, Key="runs/other/cases/x.json", Body=b"{}")

    def boto_keys(prefix: str, **extra) -> list[list[str]]:
        pages = boto.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=prefix, **extra
        )
        return [[o["Key"] for o in page.get("Contents", [])] for page in pages]

    def seam_keys(prefix: str, **extra) -> list[list[str]]:
        pages = seam.get_paginator("list_objects_v2").paginate(
            Bucket=BUCKET, Prefix=prefix, **extra
        )
        return [[o["Key"] for o in page.get("Contents", [])] for page in pages]

    for prefix in ("runs/r/cases/", "runs/", "nothing/", ""):
        expected = boto_keys(prefix)
        assert seam_keys(prefix) == expected
        assert RunStore(BUCKET, client=seam).list_keys(prefix) == [k for p in expected for k in p]
    small = seam_keys("runs/r/cases/", MaxKeys=400)
    assert [len(page) for page in small] == [400, 400, 204]
    assert small == boto_keys("runs/r/cases/", MaxKeys=400)
    http_calls.clear()
    assert len(seam_keys("runs/")) == 2
    assert len(RunStore(BUCKET, client=seam).list_keys("runs/r/cases/")) == 1004
    assert http_calls == []  # the seam's listings never reached moto's HTTP layer


def test_other_calls_and_parameters_go_through_boto3(clients, http_calls):
    """Anything RunStore does not ask (a range, a head, a delete) is boto3's, unchanged."""
    seam, _ = clients
    seam.put_object(Bucket=BUCKET, Key="k", Body=b"0123456789")
    assert seam.get_object(Bucket=BUCKET, Key="k", Range="bytes=2-4")["Body"].read() == b"234"
    assert seam.head_object(Bucket=BUCKET, Key="k")["ContentLength"] == 10
    seam.delete_object(Bucket=BUCKET, Key="k")
    assert RunStore(BUCKET, client=seam).get_json_or_none("k") is None
    assert http_calls == [("get_object", "k")]  # the ranged get; head and delete not counted
