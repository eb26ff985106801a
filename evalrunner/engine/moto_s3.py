"""The S3 half of the local engine's moto seams (see :mod:`evalrunner.engine.moto_compat`,
which re-exports it, and whose compatibility test pins it to the same moto version): a client
that answers the run storage's puts, gets and listings from moto's S3 backend directly.

Why by hand: no library offers an in-process S3 that shares moto's backend, and the trip
through botocore's serialisation and moto's HTTP-response layer was about 85 % of run_case's
CPU per case (issue 18). The client copies only what that layer does for these three calls
and sends every other call or parameter the long way, through a normal boto3 client.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError
from moto.core.exceptions import ServiceException
from moto.s3.models import S3Backend, s3_backends

#: The parameters the in-process S3 client answers itself, per operation (what RunStore
#: passes); any other (a version, a range, SSE, tagging) goes the long way, through moto's S3.
_DIRECT_S3_PARAMETERS = {
    "put_object": frozenset({"Bucket", "Key", "Body", "ContentType", "IfNoneMatch"}),
    "get_object": frozenset({"Bucket", "Key"}),
    "list_objects_v2": frozenset({"Bucket", "Prefix", "ContinuationToken", "MaxKeys"}),
}
#: The HTTP status moto's HTTP layer gives the errors the seam can raise (moto's exception
#: classes carry the code only).
_S3_ERROR_STATUS = {
    "NoSuchKey": 404,
    "NoSuchBucket": 404,
    "PreconditionFailed": 412,
    "ConditionalRequestConflict": 409,
}
_S3_LIST_PAGE = 1000  # S3's own, and boto3's paginator's, default page size


def _s3_error(exc: ServiceException, operation: str) -> ClientError:
    """moto's exception as the ``ClientError`` botocore would have raised from its answer."""
    code = str(exc.code)
    return ClientError(
        {
            "Error": {"Code": code, "Message": str(exc.message)},
            "ResponseMetadata": {"HTTPStatusCode": _S3_ERROR_STATUS.get(code, 400)},
        },
        operation,
    )


class InProcessS3Client:
    """The S3 client a local run's :class:`~evalrunner.storage.RunStore` gets: ``put_object``,
    ``get_object`` and ``list_objects_v2`` pages go straight to moto's S3 backend.

    Through a boto3 client each call is serialised and signed by botocore, parsed back by
    moto's request hook and S3 responses class, and its answer makes the same trip back (the
    body copied on each hop), all under the GIL on the thread of the case: it was about 85% of
    run_case's CPU time. This client does what moto's ``S3Response.put_object`` /
    ``get_object`` / ``list_objects_v2`` do with the parameters RunStore passes (the same
    backend calls, the ``If-None-Match: *`` precondition, the ``Content-Type`` metadata, the
    bucket's ACL, moto's own continuation tokens) and raises the ``ClientError`` botocore
    would (``NoSuchKey``, ``NoSuchBucket``, ``PreconditionFailed``). Any other call or
    parameter goes to ``fallback()``, a boto3 client against the mock. By hand because moto
    has no client-shaped API over its backends. A conditional put holds a lock between its
    check and its write (moto's HTTP path does not: this is, if anything, stricter)."""

    def __init__(
        self,
        fallback: Callable[[], Any],
        *,
        account_id: str,
        partition: str = "aws",
    ) -> None:
        self._fallback = fallback
        self._account_id = account_id
        self._partition = partition
        self._backend: S3Backend | None = None
        self._lock = threading.Lock()
        self._client: Any = None

    # -- plumbing ---------------------------------------------------------------------------
    def backend(self) -> S3Backend:
        """moto's S3 backend of the account, looked up at the first call (inside the mock
        the run starts) and kept: a lookup takes moto's backend lock."""
        backend = self._backend
        if backend is None:
            backend = s3_backends[self._account_id][self._partition]
            self._backend = backend
        return backend

    def _boto(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._fallback()
            return self._client

    def __getattr__(self, name: str) -> Any:
        # Any other operation (head_object, delete_object, ...) as boto3 would do it.
        if name.startswith("_"):  # not ours to forward (and no recursion before __init__)
            raise AttributeError(name)
        return getattr(self._boto(), name)

    @staticmethod
    def _direct(operation: str, parameters: dict[str, Any]) -> bool:
        return not set(parameters) - _DIRECT_S3_PARAMETERS[operation]

    # -- the three operations a run's storage uses ------------------------------------------
    def put_object(self, **parameters: Any) -> dict[str, Any]:
        condition = parameters.get("IfNoneMatch")
        if not self._direct("put_object", parameters) or condition not in (None, "*"):
            return dict(self._boto().put_object(**parameters))
        body = parameters.get("Body") or b""
        data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        bucket_name, key_name = str(parameters["Bucket"]), str(parameters["Key"])
        backend = self.backend()
        try:
            if condition == "*":
                with self._lock:
                    if backend.get_object(bucket_name, key_name) is not None:
                        raise _s3_error(PreconditionFailedError(), "PutObject")
                    key = backend.put_object(bucket_name, key_name, data, storage="STANDARD")
            else:
                key = backend.put_object(bucket_name, key_name, data, storage="STANDARD")
            if "ContentType" in parameters:
                key.set_metadata({"Content-Type": str(parameters["ContentType"])})
            key.set_acl(backend.get_bucket(bucket_name).acl)
        except ServiceException as exc:
            raise _s3_error(exc, "PutObject") from exc
        return {"ETag": key.etag, "ResponseMetadata": {"HTTPStatusCode": 200}}

    def get_object(self, **parameters: Any) -> dict[str, Any]:
        if not self._direct("get_object", parameters):
            return dict(self._boto().get_object(**parameters))
        backend = self.backend()
        try:
            key = backend.get_object(str(parameters["Bucket"]), str(parameters["Key"]))
        except ServiceException as exc:
            raise _s3_error(exc, "GetObject") from exc
        if key is None:
            raise _s3_error(MissingKeyError(), "GetObject")
        if key.storage_class != "STANDARD":  # archived objects need moto's restore checks
            return dict(self._boto().get_object(**parameters))
        data = key.value
        return {
            "Body": io.BytesIO(data),
            "ContentLength": len(data),
            "ContentType": key.metadata.get("Content-Type", "binary/octet-stream"),
            "ETag": key.etag,
            "LastModified": key.last_modified,
            "ResponseMetadata": {"HTTPStatusCode": 200},
        }

    def list_objects_v2(self, **parameters: Any) -> dict[str, Any]:
        if not self._direct("list_objects_v2", parameters):
            return dict(self._boto().list_objects_v2(**parameters))
        backend = self.backend()
        prefix = parameters.get("Prefix") or None
        try:
            bucket = backend.get_bucket(str(parameters["Bucket"]))
            keys, truncated, token = backend.list_objects_v2(
                bucket=bucket,
                prefix=prefix,
                delimiter=None,
                continuation_token=parameters.get("ContinuationToken"),
                start_after=None,
                max_keys=int(parameters.get("MaxKeys", _S3_LIST_PAGE)),
            )
        except ServiceException as exc:
            raise _s3_error(exc, "ListObjectsV2") from exc
        contents = [
            {
                "Key": key.name,
                "LastModified": key.last_modified,
                "ETag": key.etag,
                "Size": key.size,
                "StorageClass": key.storage_class,
            }
            for key in keys
            if not isinstance(key, str)
        ]
        page: dict[str, Any] = {
            "IsTruncated": truncated,
            "Name": bucket.name,
            "Prefix": prefix or "",
            "KeyCount": len(contents),
            "MaxKeys": int(parameters.get("MaxKeys", _S3_LIST_PAGE)),
        }
        if contents:
            page["Contents"] = contents
        if token:
            page["NextContinuationToken"] = token
        return page

    def get_paginator(self, operation: str) -> Any:
        if operation != "list_objects_v2":
            return self._boto().get_paginator(operation)
        return _ListObjectsPaginator(self)


class _ListObjectsPaginator:
    """What RunStore asks of ``get_paginator("list_objects_v2")``: ``paginate`` yielding the
    pages, following the continuation token as botocore's paginator does."""

    def __init__(self, client: InProcessS3Client) -> None:
        self._client = client

    def paginate(self, **parameters: Any) -> Iterator[dict[str, Any]]:
        request = dict(parameters)
        while True:
            page = self._client.list_objects_v2(**request)
            yield page
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return
            request["ContinuationToken"] = token


class MissingKeyError(ServiceException):
    """moto's ``MissingKey`` minus its XML template (only the code and message are used)."""

    code, message = "NoSuchKey", "The specified key does not exist."


class PreconditionFailedError(ServiceException):
    code, message = "PreconditionFailed", "At least one of the pre-conditions did not hold"


__all__ = ["InProcessS3Client", "MissingKeyError", "PreconditionFailedError"]
