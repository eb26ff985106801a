"""RunStore's "nothing there" is a missing object only: a read the role is denied raises, so a
missing permission is never taken for an empty cache, record or sidecar (issue 29 item 3)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from evalrunner.errors import ObjectMissing, StorageError
from evalrunner.storage import RunStore


def stubbed() -> tuple[RunStore, Stubber]:
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="a", aws_secret_access_key="b"
    )
    return RunStore("runner-bucket", client=client), Stubber(client)


def test_a_missing_object_is_none() -> None:
    store, stub = stubbed()
    with stub:
        stub.add_client_error("get_object", "NoSuchKey", http_status_code=404)
        assert store.get_json_or_none("judge-cache/k.json") is None
        stub.add_client_error("get_object", "NoSuchKey", http_status_code=404)
        with pytest.raises(ObjectMissing, match="does not exist; upload it first"):
            store.get_bytes("judge-cache/k.json")


def test_a_denied_read_raises_with_the_reason() -> None:
    store, stub = stubbed()
    with stub:
        stub.add_client_error("get_object", "AccessDenied", "Access Denied", 403)
        with pytest.raises(StorageError, match="AccessDenied") as caught:
            store.get_json_or_none("judge-cache/k.json")
    assert not isinstance(caught.value, ObjectMissing)
