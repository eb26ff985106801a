"""The S3 half of the local engine's moto seams (see :mod:`evalrunner.engine.moto_compat`,
which re-exports it, and whose compatibility test pins it to the same moto version): a client
that answers the run storage's puts, gets and listings from moto's S3 backend directly.

Why by hand: no library offers an in-process S3 that shares moto's backend, and the trip
through botocore's serialisation and moto's HTTP-response layer was about 85 % of run_case's
CPU per case (issue 18). The client copies only what that layer does for these three calls
and sends every other call or parameter the long way, through a normal boto3 client.

The objects it puts are ``CompactKey`` objects: moto's ``FakeKey`` as every moto reader sees
it, holding its bytes once (deflated where that pays) and only what differs from key to key,
so that the embedded S3's memory follows the bytes a run stores, not three times them.
"""

from __future__ import annotations

import functools
import io
import threading
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from botocore.exceptions import ClientError
from moto.core.exceptions import ServiceException
from moto.core.utils import utcnow
from moto.s3 import notifications
from moto.s3.models import FakeBucket, FakeKey, S3Backend, s3_backends
from moto.settings import get_s3_default_key_buffer_size
from moto.utilities.utils import LowercaseDict, md5_hash

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
#: Objects from this size up are kept deflated when that saves at least a quarter (a case
#: record's JSON shrinks ~4x); smaller ones, and ones that do not shrink, are kept as put.
_DEFLATE_FROM = 512
#: What a :class:`CompactKey` holds itself; every other attribute of a ``FakeKey`` is the
#: same for every key the seam puts in a bucket and is read from the bucket's key class.
_PER_KEY_ATTRIBUTES = ("name", "last_modified", "_metadata", "acl", "_etag", "contentsize")


def _pack(data: bytes) -> tuple[bytes, bool]:
    """``data`` as a key keeps it: deflated (zlib's fastest level) where that saves a
    quarter or more, else the same bytes object (no copy)."""
    if len(data) >= _DEFLATE_FROM:
        deflated = zlib.compress(data, 1)
        if len(deflated) <= len(data) * 3 // 4:
            return deflated, True
    return data, False


class CompactKey(FakeKey):
    """An object the seam put: a ``FakeKey`` to every moto reader (the interpreter's
    ItemReader, the engine's download and any boto3 call through moto's S3 responses read its
    ``value``, ``etag``, ``size``, ``metadata``...), holding its bytes once.

    A ``FakeKey`` keeps its bytes in a ``SpooledTemporaryFile`` (a ``BytesIO`` holding a copy
    of what was put), hands out a fresh copy on each read, and sets ~40 attributes per key,
    most of them the same for every key of a bucket: a 2.3 KB case record held ~5.9 KB
    (tracemalloc, issue 18). This one keeps the bytes put (deflated when that saves a quarter:
    JSON shrinks ~4x; a read then inflates one copy, an undeflated read copies nothing), its
    ETag (computed once, at the put, as S3 answers it), and the attributes in
    ``_PER_KEY_ATTRIBUTES``; the rest are class attributes of :func:`_key_class`, taken from a
    ``FakeKey`` moto builds itself, so attributes a moto release adds come with it. moto
    assigning any of them on a key (a restore, a legal hold) sets it on that key alone, as
    on a ``FakeKey``. By hand because moto offers no way to choose how a key stores its
    value; the seam uses it only for plain objects in an unversioned, unencrypted bucket.
    It has no ``_value_buffer``: the ``FakeKey`` methods that read one are overridden here
    (``tests/unit/engine/test_in_process_s3.py`` pins that for moto 5.2.5)."""

    _packed: bytes
    _deflated: bool

    def __new__(cls, *args: Any, **kwargs: Any) -> CompactKey:
        # Not moto's BaseModel.__new__, which appends every instance to a class-level list
        # (``instances_tracked``, for moto server's dashboard and reset's ``dispose``) that
        # would hold every key put, replaced or not, for the life of the process: these
        # classes are not the ones moto's reset empties, and the keys hold no file to close.
        return object.__new__(cls)

    def __init__(  # FakeKey.__init__ on purpose not called: its defaults are the class's
        self, name: str, data: bytes, *, acl: Any, content_type: str | None
    ) -> None:
        self.name = name
        self.last_modified = utcnow()
        self._metadata = LowercaseDict()
        self._metadata["Content-Type"] = content_type or "binary/octet-stream"
        self.acl = acl
        self._etag = md5_hash(data).hexdigest()
        self.value = data

    @property
    def value(self) -> bytes:
        return zlib.decompress(self._packed) if self._deflated else self._packed

    @value.setter
    def value(self, new_value: bytes | str) -> None:
        data = new_value.encode("utf-8") if isinstance(new_value, str) else bytes(new_value)
        self._packed, self._deflated = _pack(data)
        self.contentsize = len(data)

    @property
    def etag(self) -> str:
        if self._etag is None:  # an assigned value (FakeKey does not reset it either)
            self._etag = md5_hash(self.value).hexdigest()
        return f'"{self._etag}"'

    def __getstate__(self) -> dict[str, Any]:  # copy.deepcopy (CopyObject) and pickling
        state = {k: v for k, v in self.__dict__.items() if k not in ("_packed", "_deflated")}
        state["value"] = self.value
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update({k: v for k, v in state.items() if k != "value"})
        self.value = state["value"]

    def dispose(self, garbage: bool = False) -> None:
        self.disposed = True  # no file to close

    def __del__(self) -> None:  # nothing to release, nothing to warn about
        pass


@functools.lru_cache(maxsize=64)
def _key_class(account_id: str, region_name: str, bucket_name: str) -> type[CompactKey]:
    """The :class:`CompactKey` class of one bucket: the attributes of the ``FakeKey`` that
    ``S3Backend.put_object`` would build there (standard storage, unversioned, unencrypted),
    less the per-key ones, as class attributes."""
    template = FakeKey(
        name="",
        value=b"",
        account_id=account_id,
        region_name=region_name,
        storage="STANDARD",
        is_versioned=False,
        version_id="null",
        bucket_name=bucket_name,
    )
    shared = {
        name: value
        for name, value in vars(template).items()
        if name not in _PER_KEY_ATTRIBUTES and name != "_value_buffer"
    }
    template.dispose()  # closes its buffer (after the copy above: ``disposed`` is False there)
    # __module__ named: moto's model metaclass files the class under the module's second part
    return type("CompactKey", (CompactKey,), {**shared, "__module__": __name__})


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


def _new_key(
    backend: S3Backend, bucket: FakeBucket, name: str, data: bytes, content_type: str | None
) -> FakeKey:
    """The key the seam stores: a :class:`CompactKey`, or, for an object larger than moto's
    key buffer (5 MiB by default; a large run's report.json), moto's own ``FakeKey``, built as
    ``S3Backend.put_object`` builds it, which keeps such an object in a file on disk."""
    if len(data) > get_s3_default_key_buffer_size():
        key = FakeKey(
            name=name,
            value=data,
            account_id=backend.account_id,
            region_name=backend.region_name,
            storage="STANDARD",
            is_versioned=False,
            version_id="null",
            bucket_name=bucket.name,
        )
        if content_type is not None:
            key.set_metadata({"Content-Type": content_type})
        key.set_acl(bucket.acl)
        return key
    key_class = _key_class(backend.account_id, backend.region_name, bucket.name)
    return key_class(name, data, acl=bucket.acl, content_type=content_type)


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

    #: Read by :class:`~evalrunner.storage.RunStore`: reads here are CPU in this process, so
    #: a step reading many objects reads them in turn rather than from reader threads.
    answers_in_process = True

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
            bucket = backend.get_bucket(bucket_name)
        except ServiceException as exc:
            raise _s3_error(exc, "PutObject") from exc
        if bucket.is_versioned or bucket.encryption:  # moto's own keys, the long way
            return dict(self._boto().put_object(**parameters))
        content_type = parameters.get("ContentType")
        key = _new_key(
            backend, bucket, key_name, data, None if content_type is None else str(content_type)
        )
        if condition == "*":
            with self._lock:
                if bucket.keys.get(key_name) is not None:
                    raise _s3_error(PreconditionFailedError(), "PutObject")
                self._store(backend, bucket, key)
        else:
            self._store(backend, bucket, key)
        return {"ETag": key.etag, "ResponseMetadata": {"HTTPStatusCode": 200}}

    @staticmethod
    def _store(backend: S3Backend, bucket: FakeBucket, key: FakeKey) -> None:
        """What ``S3Backend.put_object`` does with the key it built, in an unversioned
        bucket: the key replaces the name's, and the bucket's notifications are sent."""
        bucket.keys.setlist(key.name, [key])
        notifications.send_event(
            backend.account_id,
            notifications.S3NotificationEvent.OBJECT_CREATED_PUT_EVENT,
            bucket,
            key,
        )

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


__all__ = ["CompactKey", "InProcessS3Client", "MissingKeyError", "PreconditionFailedError"]
