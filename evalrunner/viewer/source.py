"""Where the viewer reads runs from: a local ``--out`` folder or an S3 bucket prefix.

Both speak keys relative to the root they were given (``test-reports/<target>/<stamp>-…``).
A key is checked before any read or write: no ``..`` part, no absolute path, no backslash,
and (locally) the resolved path must stay inside the folder, so nothing a URL carries can
reach a file outside what the user chose to serve.

A read–modify–write (a reviewer's label added to the run's labels file) goes through
:meth:`Source.update`, which never loses a write made by someone else in between: in a bucket
the write is conditional (``If-Match`` the ETag read, or ``If-None-Match: *`` when there was
no object) and, when another reviewer's write got there first, the object is read again and
the change applied to what is there now.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from evalrunner.errors import ObjectMissing, StorageError


class UnsafeKey(StorageError):
    """A key that would leave the served folder or prefix."""


def safe_key(key: str) -> str:
    """``key`` as a clean relative POSIX key, or :class:`UnsafeKey` when it could leave the
    root (``..``, an absolute path, a drive, a backslash, a NUL). A colon elsewhere is kept:
    a target named ``llama3:8b`` has a report folder of that name."""
    drive = len(key) > 1 and key[1] == ":" and key[0].isalpha()  # C:… on Windows
    if not key or "\\" in key or "\x00" in key or key.startswith("/") or drive:
        raise UnsafeKey(f"{key[:80]!r} is not a key inside the served folder")
    parts = PurePosixPath(key).parts
    # a key that is not already in its clean form (``a//b``, ``a/./b``, ``a/``) is refused,
    # not cleaned: in a bucket those are other objects than ``a/b``, so a clean-up would read
    # or write an object the listing never named
    if any(p in ("..", ".", "") for p in parts) or "/".join(parts) != key:
        raise UnsafeKey(f"{key[:80]!r} is not a key inside the served folder")
    return key


@dataclass(frozen=True)
class Stat:
    """A key with what changes when its object changes (to know when a cached copy is old)."""

    key: str
    version: str
    #: bytes (None: not known), so a listed object too large to be what it says is not read
    size: int | None = None


class Source(Protocol):
    """Read and write objects under one root."""

    @property
    def label(self) -> str: ...

    def list(self, suffix: str, under: str = "") -> Iterator[Stat]: ...

    def read(self, key: str) -> bytes: ...

    def exists(self, key: str) -> bool: ...

    def version(self, key: str) -> str | None: ...

    def write(self, key: str, data: bytes, content_type: str) -> None: ...

    def update(
        self, key: str, change: Callable[[bytes | None], bytes], content_type: str
    ) -> None: ...


#: How many times an update re-reads and re-applies its change after losing a race.
UPDATE_TRIES = 8


class UpdateConflict(StorageError):
    """An update lost the race to other writers every time it tried."""


class LocalSource:
    """A local folder (an ``--out`` folder, or any folder holding ``test-reports/``)."""

    def __init__(self, root: Path) -> None:
        if not root.is_dir():
            raise StorageError(
                f"{root}: no such folder; give the --out folder of your runs (it holds "
                "test-reports/), or s3://bucket/prefix"
            )
        self.root = root.resolve()
        self._update_lock = threading.Lock()

    @property
    def label(self) -> str:
        return str(self.root)

    def _path(self, key: str) -> Path:
        path = (self.root / safe_key(key)).resolve()
        if not path.is_relative_to(self.root):
            raise UnsafeKey(f"{key[:80]!r} is not a key inside the served folder")
        return path

    def list(self, suffix: str, under: str = "") -> Iterator[Stat]:
        """Files ending in ``suffix`` (under the sub-folder ``under``, when given)."""
        top = self._path(under) if under else self.root
        if not top.is_dir():
            return
        for path in top.rglob(f"*{suffix}"):
            if path.is_file() and not path.is_symlink():
                info = path.stat()
                key = path.relative_to(self.root).as_posix()
                yield Stat(key, f"{info.st_mtime_ns}:{info.st_size}", info.st_size)

    def read(self, key: str) -> bytes:
        return self._path(key).read_bytes()

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def version(self, key: str) -> str | None:
        """What changes when the file changes (None: no such file)."""
        path = self._path(key)
        if not path.is_file():
            return None
        info = path.stat()
        return f"{info.st_mtime_ns}:{info.st_size}"

    def write(self, key: str, data: bytes, content_type: str) -> None:
        path = self._path(key)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_bytes(data)
        temporary.replace(path)

    def update(self, key: str, change: Callable[[bytes | None], bytes], content_type: str) -> None:
        """``change`` applied to the file's bytes (None: no file yet), the result written; the
        read and the write cannot interleave with another update of this server."""
        with self._update_lock:
            path = self._path(key)
            self.write(key, change(path.read_bytes() if path.is_file() else None), content_type)


class S3Source:
    """A bucket prefix (the deployed runner's bucket), read with the user's credentials."""

    def __init__(self, bucket: str, prefix: str, client: Any) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.client = client

    @classmethod
    def of(cls, url: str, client: Any = None) -> S3Source:
        """``s3://bucket/prefix`` with a boto3 client made from the environment's credentials."""
        rest = url[len("s3://") :]
        bucket, _, prefix = rest.partition("/")
        if not bucket:
            raise StorageError(f"{url!r}: write s3://bucket or s3://bucket/prefix")
        if client is None:
            import boto3

            client = boto3.client("s3")
        return cls(bucket, prefix, client)

    @property
    def label(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"

    def list(self, suffix: str, under: str = "") -> Iterator[Stat]:
        """Objects ending in ``suffix`` (under the sub-prefix ``under``, when given)."""
        start = self.prefix + (safe_key(under) + "/" if under else "")
        pages = self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=start
        )
        for page in pages:
            for item in page.get("Contents", []):
                key = item["Key"][len(self.prefix) :]
                if key.endswith(suffix):
                    yield Stat(key, str(item.get("ETag", "")), item.get("Size"))

    def read(self, key: str) -> bytes:
        """The object's bytes; one gone since it was listed, or not readable with these
        credentials, is a :class:`StorageError` (the error every source speaks), not
        botocore's own."""
        from botocore.exceptions import ClientError

        full = self.prefix + safe_key(key)
        try:
            body = self.client.get_object(Bucket=self.bucket, Key=full)
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            kind = ObjectMissing if code in ("NoSuchKey", "404") else StorageError
            raise kind(f"s3://{self.bucket}/{full}: {code or exc}") from None
        data: bytes = body["Body"].read()
        return data

    def exists(self, key: str) -> bool:
        return self.version(key) is not None

    def version(self, key: str) -> str | None:
        """The object's ETag (None: no such object)."""
        from botocore.exceptions import ClientError

        try:
            head = self.client.head_object(Bucket=self.bucket, Key=self.prefix + safe_key(key))
        except ClientError:
            return None
        return str(head.get("ETag", ""))

    def write(self, key: str, data: bytes, content_type: str) -> None:
        self.client.put_object(
            Bucket=self.bucket, Key=self.prefix + safe_key(key), Body=data, ContentType=content_type
        )

    def update(self, key: str, change: Callable[[bytes | None], bytes], content_type: str) -> None:
        """``change`` applied to the object's bytes (None: no object yet), written only if the
        object is still the one read (S3 conditional writes); when another writer changed it
        in between (412 Precondition Failed, or 409 while a conditional write is in flight),
        read it again and re-apply the change, up to :data:`UPDATE_TRIES` times."""
        from botocore.exceptions import ClientError

        full = self.prefix + safe_key(key)
        for _ in range(UPDATE_TRIES):
            condition: dict[str, str]
            try:
                got = self.client.get_object(Bucket=self.bucket, Key=full)
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") not in ("NoSuchKey", "404"):
                    raise
                current, condition = None, {"IfNoneMatch": "*"}
            else:
                current, condition = got["Body"].read(), {"IfMatch": str(got["ETag"])}
            try:
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=full,
                    Body=change(current),
                    ContentType=content_type,
                    **condition,
                )
            except ClientError as exc:
                code = exc.response.get("Error", {}).get("Code")
                if code in ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey"):
                    continue  # someone else wrote (or removed) it since the read: read again
                raise
            return
        raise UpdateConflict(
            f"{self.label}{key}: other writers changed it {UPDATE_TRIES} times while this "
            "change was being saved; nothing was overwritten, save it again"
        )


def open_source(where: str) -> Source:
    """The source named on the command line: ``s3://bucket/prefix`` or a folder."""
    if where.startswith("s3://"):
        return S3Source.of(where)
    return LocalSource(Path(where))
