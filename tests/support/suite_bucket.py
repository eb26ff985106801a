"""A suite in a bucket of moto's S3, and the run store over it: what a pipeline step's unit
test starts from (Prepare reads the suite from the event's key)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import boto3
from moto import mock_aws

from evalrunner.storage import RunStore


@contextmanager
def suite_store(
    suite: bytes | str, *, bucket: str = "runner-bucket", key: str = "test-suites/s.csv"
) -> Iterator[RunStore]:
    """Inside moto's mock for the block: ``bucket`` holding ``suite`` at ``key``."""
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=bucket)
        client.put_object(Bucket=bucket, Key=key, Body=suite)
        yield RunStore(bucket, client=client)
