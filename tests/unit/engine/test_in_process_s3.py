"""The local engine's S3 seam (issue 18): a run's storage reaches moto's S3 backend without
botocore, and nothing can tell: bytes, content types, missing keys and buckets, conditional
writes and paginated listings are what a boto3 client against the same mock gives, and each
side reads what the other wrote."""

from __future__ import annotations

import gc
import hashlib
import inspect
import json
import os
import tracemalloc
import weakref

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.core.common_models import BaseModel
from moto.s3.models import FakeKey, S3Backend
from moto.s3.responses import S3Response

from evalrunner.engine.moto_compat import InProcessS3Client
from evalrunner.engine.moto_s3 import CompactKey
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


# -- what the embedded S3 holds for what the seam puts (issue 18) -----------------------------


def _record(i: int) -> bytes:
    """A case record's shape and size (~2.3 KB of JSON), different for every case."""
    results = [
        {"metric": m, "score": (i * 7 % 100) / 100, "details": {"tokens": i % 13, "name": m * 3}}
        for m in ("Rouge Metric", "BLEU", "Token F1", "Exact match", "Faithfulness")
    ]
    body = {
        "id": f"c{i}",
        "question": f"How many days of leave for item {i}? " * 3,
        "answer": f"The answer to item {i} is {i % 42} days, as the policy says. " * 12,
        "contexts": [
            f"Policy section {i}.{j}: leave is counted in days, {i * j % 97} of them at most."
            for j in range(12)
        ],
        "results": results,
        "latency_ms": i * 1.5,
    }
    return json.dumps(body).encode()


def _held_by_puts(client, bodies: list[bytes]) -> int:
    """Bytes still allocated after putting ``bodies`` (made before tracing starts, so the
    bodies themselves are not counted unless the store copies them)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i, body in enumerate(bodies):
            client.put_object(Bucket=BUCKET, Key=f"runs/r/cases/{i:05d}.json", Body=body)
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def test_the_seam_holds_each_objects_bytes_once(clients):
    """Incompressible bodies are kept as put, not copied: what the puts leave allocated is
    bookkeeping, under a quarter of the bytes put. moto's own put (the FakeKey the seam used
    to build, as boto3's path still does) left 2.5x the bytes of 2.3 KB records held: a copy
    in its spooled buffer and ~3.6 KB of attributes per key."""
    seam, _ = clients
    bodies = [os.urandom(4096) for _ in range(400)]
    put = sum(map(len, bodies))
    held = _held_by_puts(seam, bodies)
    assert held < 0.25 * put, (held, put)
    # ...while the same bodies through moto's own put keep a copy each and more
    backend = seam.backend()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i, body in enumerate(bodies):
            backend.put_object(BUCKET, f"moto/{i:05d}", body, storage="STANDARD")
        gc.collect()
        by_moto = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert by_moto > 1.5 * put  # the bound above is not one moto's keys meet anyway


def test_records_are_kept_deflated_and_read_back_whole(clients):
    """Case records (~2.5 KB of JSON) are held in under 0.7 of their size (deflated ~4x, plus
    ~0.85 KB of key; moto's own keys hold 2.5x), and every reader gets the bytes put: the
    seam, boto3 through moto's S3 responses, RunStore."""
    seam, boto = clients
    bodies = [_record(i) for i in range(400)]
    put = sum(map(len, bodies))
    held = _held_by_puts(seam, bodies)
    assert held < 0.7 * put, (held, put)
    for i in (0, 199, 399):
        key = f"runs/r/cases/{i:05d}.json"
        assert seam.get_object(Bucket=BUCKET, Key=key)["Body"].read() == bodies[i]
        assert boto.get_object(Bucket=BUCKET, Key=key)["Body"].read() == bodies[i]
    assert RunStore(BUCKET, client=seam).get_json_or_none("runs/r/cases/00007.json") == (
        json.loads(bodies[7])
    )


@pytest.mark.parametrize(
    "body",
    [b"", b"{}", _record(3), os.urandom(3000), b"x" * 6_000_000],
    ids=["empty", "small", "record", "incompressible", "6-MB-moto-keeps-on-disk"],
)
def test_boto3_sees_seam_objects_as_its_own(clients, body):
    """What boto3 readers of the mock (the interpreter's ItemReader, the engine's download)
    get for an object the seam put is what they get for the same bytes put through boto3:
    body, ETag, length and content type by get, head and listing; a range and a copy work.
    (An object past moto's 5 MiB key buffer is moto's own key, on disk, as before.)"""
    seam, boto = clients
    seam.put_object(Bucket=BUCKET, Key="seam/obj", Body=body, ContentType="application/json")
    boto.put_object(Bucket=BUCKET, Key="boto/obj", Body=body, ContentType="application/json")
    kept = seam.backend().get_object(BUCKET, "seam/obj")
    assert isinstance(kept, CompactKey) is (len(body) < 5 * 2**20)
    by_seam = boto.get_object(Bucket=BUCKET, Key="seam/obj")
    by_boto = boto.get_object(Bucket=BUCKET, Key="boto/obj")
    assert by_seam["Body"].read() == by_boto["Body"].read() == body
    same = ("ETag", "ContentLength", "ContentType", "AcceptRanges")
    assert {k: by_seam.get(k) for k in same} == {k: by_boto.get(k) for k in same}
    assert by_seam["ETag"] == f'"{hashlib.md5(body).hexdigest()}"'
    head = boto.head_object(Bucket=BUCKET, Key="seam/obj")
    assert (head["ETag"], head["ContentLength"]) == (by_boto["ETag"], len(body))
    listed = {
        o["Key"].split("/")[0]: (o["ETag"], o["Size"], o["StorageClass"])
        for o in boto.list_objects_v2(Bucket=BUCKET)["Contents"]
    }
    assert listed["seam"] == listed["boto"]
    through_seam = seam.get_object(Bucket=BUCKET, Key="seam/obj")
    assert through_seam["Body"].read() == body
    assert (through_seam["ETag"], through_seam["ContentLength"]) == (by_boto["ETag"], len(body))
    if body:
        ranged = boto.get_object(Bucket=BUCKET, Key="seam/obj", Range="bytes=1-3")
        assert ranged["Body"].read() == body[1:4]
    boto.copy_object(
        Bucket=BUCKET, Key="copy/obj", CopySource={"Bucket": BUCKET, "Key": "seam/obj"}
    )
    assert boto.get_object(Bucket=BUCKET, Key="copy/obj")["Body"].read() == body
    assert seam.get_object(Bucket=BUCKET, Key="seam/obj")["Body"].read() == body  # source intact


def test_a_put_over_a_key_replaces_it_for_every_reader(clients):
    seam, boto = clients
    seam.put_object(Bucket=BUCKET, Key="k", Body=_record(1))
    boto.put_object(Bucket=BUCKET, Key="k", Body=b"by boto")
    assert seam.get_object(Bucket=BUCKET, Key="k")["Body"].read() == b"by boto"
    seam.put_object(Bucket=BUCKET, Key="k", Body=_record(2), ContentType="application/json")
    got = boto.get_object(Bucket=BUCKET, Key="k")
    assert (got["Body"].read(), got["ContentType"]) == (_record(2), "application/json")
    assert len(boto.list_objects_v2(Bucket=BUCKET)["Contents"]) == 1


def test_a_versioned_bucket_keeps_moto_keys(clients):
    """Versions are moto's to keep: the seam sends a put into a versioned bucket the long way,
    and every version stays readable."""
    seam, boto = clients
    boto.put_bucket_versioning(Bucket=BUCKET, VersioningConfiguration={"Status": "Enabled"})
    first = seam.put_object(Bucket=BUCKET, Key="v", Body=b"one")
    seam.put_object(Bucket=BUCKET, Key="v", Body=b"two")
    assert "VersionId" in first
    versions = boto.list_object_versions(Bucket=BUCKET, Prefix="v")["Versions"]
    assert len(versions) == 2
    assert seam.get_object(Bucket=BUCKET, Key="v")["Body"].read() == b"two"


def test_seam_keys_are_freed_with_the_mock():
    """moto's models append every instance to a class-level list until its reset; the seam's
    keys are not in one, so a long-lived process (a notebook running many runs) does not keep
    every run's objects once the run's mock is gone."""
    with mock_aws():
        boto3.client("s3", region_name="us-east-1").create_bucket(Bucket=BUCKET)
        seam = InProcessS3Client(
            lambda: boto3.client("s3", region_name="us-east-1"), account_id=ACCOUNT
        )
        seam.put_object(Bucket=BUCKET, Key="k", Body=_record(0))
        key = seam.backend().get_object(BUCKET, "k")
        assert isinstance(key, CompactKey) and isinstance(key, FakeKey)
        assert key not in type(key).instances_tracked
        alive = weakref.ref(key)
        del key
    gc.collect()
    assert alive() is None


def test_compact_keys_answer_as_moto_5_2_5_keys(clients):
    """A CompactKey reads every attribute a FakeKey from ``S3Backend.put_object`` has, with
    the same value, and overrides every FakeKey method that reads the spooled buffer it does
    not have: if a moto release adds a reader of ``_value_buffer`` or changes how the backend
    stores a key, this fails before a run does."""
    seam, _ = clients
    backend = seam.backend()
    body = _record(5)
    put = backend.put_object(BUCKET, "real", body, storage="STANDARD")
    put.set_metadata({"Content-Type": "application/json"})
    put.set_acl(backend.get_bucket(BUCKET).acl)
    seam.put_object(Bucket=BUCKET, Key="compact", Body=body, ContentType="application/json")
    real, compact = backend.get_object(BUCKET, "real"), backend.get_object(BUCKET, "compact")
    assert type(compact).__mro__[1] is CompactKey
    skip = {"name", "last_modified", "_value_buffer", "lock", "_time_progressed", "_etag"}
    for name in vars(real):
        if name not in skip:
            assert getattr(compact, name) == getattr(real, name), name
    for name in ("value", "etag", "size", "metadata", "storage_class", "response_dict"):
        if name != "response_dict":
            assert getattr(compact, name) == getattr(real, name), name
    assert compact.response_dict.keys() == real.response_dict.keys()
    assert abs(compact.last_modified - real.last_modified).total_seconds() < 60
    readers = {
        name
        for name, member in vars(FakeKey).items()
        if callable(getattr(member, "fget", member))
        and "_value_buffer" in inspect.getsource(getattr(member, "fget", member))
    }
    assert readers - {"__init__"} <= set(vars(CompactKey)), readers
    put = inspect.getsource(S3Backend.put_object)
    for step in ("new_key = FakeKey(", "bucket.keys.setlist(key_name, keys)", "send_event("):
        assert step in put, step
    assert "instances_tracked.append" in inspect.getsource(BaseModel.__new__)
    spooled = inspect.getsource(FakeKey.__init__)  # what moto keeps on disk past its buffer
    assert "tempfile.SpooledTemporaryFile(self._max_buffer_size)" in spooled
    assert "get_s3_default_key_buffer_size()" in spooled
