"""Content-addressed judge response cache: a re-run of unchanged cases costs nothing.

The key is the SHA-256 of everything that determines the reply (see :func:`cache_key`). An
in-memory LRU (thread-safe) sits in front of a persistent store: a local folder
(``<cache_dir>/<key[:2]>/<key>.json``) or the run bucket (``judge-cache/<key>.json``). Only
replies that parsed and validated are stored; a broken store degrades to a miss, never to a
failed judgement.

:class:`SingleFlight` makes concurrent identical asks share one call (metrics of one case that
need the same extraction ask at the same moment).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from evalrunner.jsonout import dump_json
from evalrunner.judge.base import Message
from evalrunner.storage import RunStore

log = logging.getLogger(__name__)

#: Bumped when the prompt wrapping (reply format line, repair prompt) changes what a key
#: means. 2: a filled-in example replaced the schema document (issue 19).
CACHE_FORMAT = 2
#: Prefix of cached replies in the run bucket (shared by every run in that bucket).
BUCKET_PREFIX = "judge-cache/"
#: Replies kept in memory per judge (a few KB each).
MEMORY_ENTRIES = 2048


def schema_fingerprint(schema: type[BaseModel]) -> dict[str, Any]:
    return {"name": schema.__name__, "json": schema.model_json_schema()}


def cache_key(
    model: str,
    messages: Sequence[Message],
    schema: type[BaseModel],
    logprobs: bool,
) -> str:
    """sha256 over canonical JSON (sorted keys, no whitespace, UTF-8) of
    ``{"v": CACHE_FORMAT, "model": model, "messages": [{"role", "content"}, ...],
    "schema": {"name": schema.__name__, "json": schema.model_json_schema()},
    "logprobs": logprobs}``; hex digest."""
    payload = {
        "v": CACHE_FORMAT,
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in messages],
        "schema": schema_fingerprint(schema),
        "logprobs": bool(logprobs),
    }
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    """What is stored: the raw text that validated, what it cost, and its log-probabilities."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    top_logprobs: list[dict[str, float]] | None = None
    model: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "v": CACHE_FORMAT,
            "model": self.model,
            "text": self.text,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
            "top_logprobs": self.top_logprobs,
        }

    @classmethod
    def from_json(cls, data: Any) -> CachedReply | None:
        """None for anything that is not a well-formed entry (treated as a miss)."""
        if not isinstance(data, dict) or not isinstance(data.get("text"), str):
            return None
        raw_usage = data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        logprobs = data.get("top_logprobs")
        if logprobs is not None and not (
            isinstance(logprobs, list) and all(isinstance(p, dict) for p in logprobs)
        ):
            logprobs = None
        return cls(
            text=data["text"],
            input_tokens=int(usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            top_logprobs=logprobs,
            model=str(data.get("model") or ""),
        )


class CacheStore(Protocol):
    """A persistent home for cached replies (JSON documents by key)."""

    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, value: dict[str, Any]) -> None: ...

    def describe(self) -> str: ...


class FolderStore:
    """``<root>/<key[:2]>/<key>.json``, written atomically (temp file + rename)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser()

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path(key).read_text("utf-8"))
        except FileNotFoundError:
            return None
        # Anything but an object is a malformed entry: a miss, as CachedReply.from_json has it.
        return data if isinstance(data, dict) else None

    def save(self, key: str, value: dict[str, Any]) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(dump_json(value))
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def describe(self) -> str:
        return str(self.root)


class BucketStore:
    """``judge-cache/<key>.json`` in the run bucket, through :class:`RunStore`."""

    def __init__(self, store: RunStore, prefix: str = BUCKET_PREFIX) -> None:
        self.store = store
        self.prefix = prefix

    def object_key(self, key: str) -> str:
        return f"{self.prefix}{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        return self.store.get_json_or_none(self.object_key(key))

    def save(self, key: str, value: dict[str, Any]) -> None:
        self.store.put_json(self.object_key(key), value)

    def describe(self) -> str:
        return f"s3://{self.store.bucket}/{self.prefix}"


class ResponseCache:
    """In-memory LRU in front of an optional persistent :class:`CacheStore`. Thread-safe."""

    def __init__(self, persistent: CacheStore | None = None, *, entries: int = MEMORY_ENTRIES):
        self.persistent = persistent
        self.entries = max(1, entries)
        self._memory: OrderedDict[str, CachedReply] = OrderedDict()
        self._lock = threading.Lock()
        #: Store failures by operation ("read", "write"), each warned about once.
        self.failures: dict[str, int] = {}

    def get(self, key: str) -> CachedReply | None:
        with self._lock:
            hit = self._memory.get(key)
            if hit is not None:
                self._memory.move_to_end(key)
                return hit
        if self.persistent is None:
            return None
        try:
            hit = CachedReply.from_json(self.persistent.load(key))
        except Exception as exc:  # a broken cache is a miss, never a failed judgement
            self._failed("read", key, exc)
            return None
        if hit is not None:
            self._remember(key, hit)
        return hit

    def put(self, key: str, reply: CachedReply) -> None:
        self._remember(key, reply)
        if self.persistent is None:
            return
        try:
            self.persistent.save(key, reply.to_json())
        except Exception as exc:
            self._failed("write", key, exc)

    def _failed(self, operation: str, key: str, exc: Exception) -> None:
        """A store failure: a warning that names the fix the first time this cache fails to
        read and the first time it fails to write (a deployed role without access to
        ``judge-cache/`` would otherwise fail twice per judged case, every case, unseen),
        then a debug line each; :attr:`failures` counts them all."""
        assert self.persistent is not None
        with self._lock:
            self.failures[operation] = self.failures.get(operation, 0) + 1
            first = self.failures[operation] == 1
        where = self.persistent.describe()
        if first:
            if isinstance(self.persistent, BucketStore):
                fix = (
                    f"give the role s3:GetObject and s3:PutObject on {where}* (the CDK stack "
                    "grants it to the roles that judge), or set the judge's cache_dir, or "
                    "cache: false"
                )
            else:
                fix = f"make {where} readable and writable, or set cache: false"
            log.warning(
                "judge cache %s: cannot %s %s: %s. The judge still works, uncached: every "
                "unchanged case is judged (and paid for) again. Fix: %s. Later failures of "
                "this cache are logged at debug level.",
                where,
                operation,
                key,
                exc,
                fix,
            )
        else:
            log.debug("judge cache %s: cannot %s %s: %s", where, operation, key, exc)

    def forget(self, key: str) -> None:
        """Drop ``key`` from memory (an entry that no longer validates)."""
        with self._lock:
            self._memory.pop(key, None)

    def _remember(self, key: str, reply: CachedReply) -> None:
        with self._lock:
            self._memory[key] = reply
            self._memory.move_to_end(key)
            while len(self._memory) > self.entries:
                self._memory.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._memory)


class SingleFlight:
    """Per-key futures: the first caller of a key computes, callers that arrive meanwhile
    wait for its result (or its exception) instead of asking again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._flights: dict[str, Future[Any]] = {}

    def join(self, key: str) -> tuple[Future[Any], bool]:
        """The key's future, and whether the caller leads (must compute and then ``land``)."""
        with self._lock:
            flight = self._flights.get(key)
            if flight is not None:
                return flight, False
            flight = self._flights[key] = Future()
            return flight, True

    def land(self, key: str) -> None:
        """The leader is done (result or exception set): later callers start afresh."""
        with self._lock:
            self._flights.pop(key, None)
