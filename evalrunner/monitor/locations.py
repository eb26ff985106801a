"""Where logs are: a local file or folder, or an S3 prefix (``s3://bucket/prefix``).

Files are read whole (gzip unpacked, by its magic bytes, up to :data:`MAX_FILE_BYTES`) and
handed on in name order. A listing names them and :func:`read_ahead` fetches a few at once
ahead of their turn (:data:`MAX_READERS` threads; boto3's clients are thread-safe): what a
serial read of a prefix of many small objects waits on is S3's latency per request, not its
bandwidth. The read-ahead is bounded in stored bytes too (:data:`READ_AHEAD_BYTES`, always at
least one file), so a folder or prefix of many large logs still holds a few files' bytes at
once, not all of them.
A file last modified before ``older_than`` is passed over unread: every record in
it happened before it was written, so none can be newer than the watermark's lateness window
(this keeps a daily run over a growing log bucket from re-reading every day before).
"""

from __future__ import annotations

import gzip
import io
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalrunner.monitor.model import MonitorError, RecordProblem

#: The most bytes one log file may unpack to (a gzip bomb is refused, not read).
MAX_FILE_BYTES = 256 * 1024 * 1024
#: File names read from a folder or prefix (anything else, e.g. a README, is passed over).
LOG_SUFFIXES = (".jsonl", ".json", ".ndjson", ".csv", ".log", ".txt")
#: What a run writes under ``--out``: never read back as logs when --out lies in the source.
OUT_FOLDERS = ("test-reports", "runs", "monitor")


#: Files fetched at once ahead of their turn (within botocore's default connection pool of
#: ten, so no connection is thrown away).
MAX_READERS = 8
#: The most stored bytes of the files fetched ahead at once (one file is always read,
#: however large).
READ_AHEAD_BYTES = 64 * 1024 * 1024
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class LogFile:
    name: str
    modified: datetime
    #: The file's bytes as stored (gzip still packed: :func:`unpack` them), read when called
    #: (a :class:`MonitorError` names what is wrong with this file alone).
    read: Callable[[], bytes]
    #: Its stored size, as listed (what the read-ahead budget counts).
    size: int = 0


@dataclass(frozen=True)
class Listing:
    files: list[LogFile]
    skipped: int
    problems: list[RecordProblem]


def is_s3(location: str) -> bool:
    return location.startswith("s3://")


def split_s3(location: str) -> tuple[str, str]:
    bucket, _, prefix = location[len("s3://") :].partition("/")
    if not bucket:
        raise MonitorError(f"SOURCE {location!r}: give s3://bucket/prefix")
    return bucket, prefix


def is_log_name(name: str) -> bool:
    base = name[:-3] if name.endswith(".gz") else name
    return base.lower().endswith(LOG_SUFFIXES)


def stored_limit() -> int:
    """The most bytes a log file may be stored as: the unpacked limit, and a little more for
    gzip of text that does not compress (a larger file is refused by its size, unread)."""
    return MAX_FILE_BYTES + MAX_FILE_BYTES // 64


def _too_big(name: str, size: int) -> RecordProblem | None:
    if size <= stored_limit():
        return None
    return RecordProblem(
        file=name,
        message=f"{size:,} bytes, over {MAX_FILE_BYTES:,} a file; split the log (not read)",
    )


def unpack(name: str, data: bytes) -> bytes:
    """The file's bytes, gunzipped when they are gzip (whatever the name says)."""
    if data[:2] != b"\x1f\x8b":
        if len(data) > MAX_FILE_BYTES:
            raise MonitorError(f"{name}: over {MAX_FILE_BYTES:,} bytes; split the log")
        return data
    chunks: list[bytes] = []
    unpacked = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
            # a chunk at a time: ``read(MAX_FILE_BYTES + 1)`` sets aside the whole limit
            while chunk := unzipped.read(_CHUNK):
                unpacked += len(chunk)
                if unpacked > MAX_FILE_BYTES:
                    raise MonitorError(
                        f"{name}: unpacks to over {MAX_FILE_BYTES:,} bytes; split the log"
                    )
                chunks.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise MonitorError(f"{name}: not a readable gzip file ({exc})") from None
    return b"".join(chunks)


def list_files(
    location: str, older_than: datetime | None, s3: Any = None, out_dir: Path | None = None
) -> Listing:
    """The log files at ``location`` (unpacked), passing over those modified before
    ``older_than``; ``s3``: a boto3 S3 client for an ``s3://`` location; ``out_dir``: a
    local run's ``--out``, whose reports (:data:`OUT_FOLDERS`) are not logs even when it
    lies inside the source folder (``evalrunner monitor . --out .``)."""
    if is_s3(location):
        return _s3_files(location, older_than, s3)
    return _local_files(Path(location), older_than, out_dir)


def _local_files(root: Path, older_than: datetime | None, out_dir: Path | None = None) -> Listing:
    written = [(out_dir / f).resolve() for f in OUT_FOLDERS] if out_dir is not None else []
    if root.is_file():
        paths = [root]
    elif root.is_dir():
        paths = sorted(
            p
            for p in root.rglob("*")
            if p.is_file()
            and is_log_name(p.name)
            and not any(p.resolve().is_relative_to(w) for w in written)
        )
    else:
        raise MonitorError(f"SOURCE {root}: no such file or folder")
    files: list[LogFile] = []
    problems: list[RecordProblem] = []
    skipped = 0
    for path in paths:
        modified = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        if older_than is not None and modified < older_than and path != root:
            skipped += 1
            continue
        size = path.stat().st_size
        if (big := _too_big(str(path), size)) is not None:
            problems.append(big)
            continue
        files.append(LogFile(str(path), modified, _local_reader(path), size))
    return Listing(files, skipped, problems)


def _local_reader(path: Path) -> Callable[[], bytes]:
    def read() -> bytes:
        try:
            return path.read_bytes()
        except OSError as exc:
            raise MonitorError(f"{path}: cannot be read ({exc})") from None

    return read


def _s3_reader(s3: Any, bucket: str, key: str) -> Callable[[], bytes]:
    def read() -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        name = f"s3://{bucket}/{key}"
        try:
            body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read(stored_limit() + 1)
        except (ClientError, BotoCoreError) as exc:  # deleted since listed, access denied
            raise MonitorError(f"{name}: cannot be read ({exc})") from None
        if len(body) > stored_limit():  # written over since it was listed
            raise MonitorError(f"{name}: over {MAX_FILE_BYTES:,} bytes; split the log")
        return body

    return read


def _s3_files(location: str, older_than: datetime | None, s3: Any) -> Listing:
    if s3 is None:
        import boto3

        s3 = boto3.client("s3")
    bucket, prefix = split_s3(location)
    files: list[LogFile] = []
    problems: list[RecordProblem] = []
    skipped = 0
    for item in _s3_objects(s3, bucket, prefix):
        key = item["Key"]
        if not is_log_name(key):
            continue
        modified = item["LastModified"]
        if older_than is not None and modified < older_than:
            skipped += 1
            continue
        name, size = f"s3://{bucket}/{key}", int(item.get("Size", 0))
        if (big := _too_big(name, size)) is not None:
            problems.append(big)  # by its listed size, never downloaded
            continue
        files.append(LogFile(name, modified, _s3_reader(s3, bucket, key), size))
    return Listing(files, skipped, problems)


def _s3_objects(s3: Any, bucket: str, prefix: str) -> Iterator[dict[str, Any]]:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
            yield from sorted(page.get("Contents") or (), key=lambda o: o["Key"])
    except (ClientError, BotoCoreError) as exc:
        raise MonitorError(f"SOURCE s3://{bucket}/{prefix}: cannot list it ({exc})") from None


def read_ahead(files: list[LogFile]) -> Iterator[tuple[LogFile, bytes | MonitorError]]:
    """Each file with its bytes, unpacked (or the :class:`MonitorError` of that file alone),
    in the order given, fetched up to :data:`MAX_READERS` at once and no further ahead than
    :data:`READ_AHEAD_BYTES` of stored bytes (the file whose turn it is always counts). What
    is held ahead is the stored bytes, as the budget counts them: each file is unpacked at
    its turn (eight gzip logs unpacked ahead would hold up to 8 x 256 MiB)."""
    if len(files) <= 1 or MAX_READERS <= 1:
        for file in files:
            yield file, _unpacked(file, _attempt(file))
        return
    budget = READ_AHEAD_BYTES
    ahead: deque[tuple[LogFile, Future[bytes | MonitorError]]] = deque()
    held = 0
    queued = iter(files)
    upcoming = next(queued, None)
    with ThreadPoolExecutor(max_workers=MAX_READERS, thread_name_prefix="monitor-read") as pool:
        while upcoming is not None or ahead:
            while (
                upcoming is not None
                and len(ahead) < MAX_READERS
                and (not ahead or held + upcoming.size <= budget)
            ):
                ahead.append((upcoming, pool.submit(_attempt, upcoming)))
                held += upcoming.size
                upcoming = next(queued, None)
            file, fetched = ahead.popleft()
            held -= file.size
            yield file, _unpacked(file, fetched.result())


def _unpacked(file: LogFile, stored: bytes | MonitorError) -> bytes | MonitorError:
    if isinstance(stored, MonitorError):
        return stored
    try:
        return unpack(file.name, stored)
    except MonitorError as exc:
        return exc


def _attempt(file: LogFile) -> bytes | MonitorError:
    try:
        return file.read()
    except MonitorError as exc:
        return exc
