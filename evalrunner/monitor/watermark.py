"""What a monitor has already taken, so no interaction is scored twice.

The design: an **event-time watermark with an allowed-lateness window and the set of ids
decided inside it**. ``event_time`` is the latest event time among the interactions decided
so far (scored, or left out by the sample); ``lateness`` (default one hour) is how late a
record may arrive. On each run an interaction is

- *new* when its id is not in ``decided`` and its time is at or after the floor
  (``event_time - lateness``): it is sampled and, if chosen, scored; either way its id is
  recorded, so it is decided once;
- a *duplicate* when its id is in ``decided`` (or appears twice in this run's records);
- *too late* when its time is before the floor: it is counted and reported, not scored;
- *pending* when it is new but not complete (an OpenTelemetry trace whose root span has not
  been read: more of it may come in a later export) and its time is within the lateness of
  the run's clock: neither scored nor taken, so the next run reads it again, whole or
  further on; once its newest piece is older than the lateness (or stamped further than the
  lateness ahead of the clock, which would never come) it is taken as it is. The
  watermark keeps when each pending one started (``pending``), and the next run reads every
  file modified since then, even one older than the floor, so no piece is left unread.

After a run the watermark moves to the newest time decided and ids older than the new floor
are dropped (a record that old is too late anyway), so the set holds one window of ids,
however long the monitor runs. The id is the record's own (request id, trace id, the id
column) or, where a log has none, a hash of its content and time
(:func:`evalrunner.monitor.model.content_id`).

**The ids are never stored**: a record's own id may be a production identifier (a user's
e-mail as the key, a session token), and the watermark lives in a bucket many can read.
``decided`` holds an HMAC-SHA256 of each id keyed with the watermark's own random ``salt``
(:meth:`Watermark.key`), so the file names no interaction, the same id in two monitors'
files does not match, and an id is still recognised when it comes again. A version-1 file
(raw ids) is read and its ids hashed on load (:meth:`Watermark._migrate`); the next save
writes version 2.

Kept as JSON beside the reports: ``monitor/<name>/watermark.json`` in the run bucket
(deployed) or under ``--out`` (local).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalrunner.monitor.model import Interaction, MonitorError, RecordProblem
from evalrunner.monitor.times import MAX_DURATION_DAYS
from evalrunner.storage import RunStore

MONITOR_PREFIX = "monitor/"
#: Run ids kept in the watermark, newest last (what moved it).
KEEP_RUNS = 20


def watermark_key(name: str) -> str:
    return f"{MONITOR_PREFIX}{name}/watermark.json"


class Selection(BaseModel):
    """One run's interactions, told apart against the watermark."""

    model_config = ConfigDict(extra="forbid")

    new: list[Interaction] = Field(default_factory=list)
    duplicates: int = 0
    too_late: int = 0
    before_since: int = 0
    #: incomplete (a trace without its root yet) and within the lateness: kept for later
    pending: list[Interaction] = Field(default_factory=list)
    #: duplicates whose id was taken for a record of another time: an id reused, not a
    #: re-delivery (passed over all the same, but said)
    reused: list[RecordProblem] = Field(default_factory=list)
    #: incomplete interactions no longer pending that cannot be scored as read (a trace
    #: whose question or answer never came): problems, neither scored nor taken
    unreadable: list[RecordProblem] = Field(default_factory=list)


class InFlightRun(BaseModel):
    """A run the deployed monitor started and follows until it ends: the watermark moved
    past its interactions when it started, so a failed execution is started again on the
    same suite (:mod:`evalrunner.monitor.follow_up`)."""

    model_config = ConfigDict(extra="forbid")

    key: str
    #: the latest attempt's run id and execution
    run_id: str
    execution_arn: str
    attempts: int = Field(default=1, ge=1)
    interactions: int = Field(default=0, ge=0)


class Watermark(BaseModel):
    """A source's watermark (see the module's docstring)."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[2] = 2
    name: str
    source: str
    lateness_seconds: float = Field(ge=0, le=MAX_DURATION_DAYS * 86400)
    event_time: datetime | None = None
    #: the HMAC key of this watermark's ids (random, made with it)
    salt: str = Field(
        default_factory=lambda: secrets.token_hex(16), min_length=32, pattern=r"^[0-9a-f]+$"
    )
    #: :meth:`key` of an id -> event time, for every interaction decided at or after the floor
    decided: dict[str, datetime] = Field(default_factory=dict)
    updated_at: datetime | None = None
    runs: list[str] = Field(default_factory=list)
    #: :meth:`key` -> start of each incomplete interaction left pending by the last run
    pending: dict[str, datetime] = Field(default_factory=dict)
    #: deployed runs started and not yet seen to succeed (oldest first)
    in_flight: list[InFlightRun] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _migrate(cls, data: Any) -> Any:
        """A version-1 watermark kept the raw ids: each is hashed with a new salt as it is
        read, so the same interactions stay decided and the next save stores no id."""
        if isinstance(data, dict) and data.get("version") == 2 and "salt" not in data:
            # its ids cannot be recognised without it: every interaction would be new again
            raise ValueError("a version-2 watermark without its salt")
        if isinstance(data, dict) and data.get("version", 1) == 1 and "salt" not in data:
            salt = secrets.token_hex(16)
            decided = data.get("decided")
            data = {**data, "version": 2, "salt": salt}
            if isinstance(decided, dict):
                data["decided"] = {_digest(salt, str(k)): t for k, t in decided.items()}
        return data

    @field_validator("event_time", "updated_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        """A time without a zone (a watermark wound back by hand) is UTC, as a source reads
        one; compared as it is with the records' UTC times it would fail every run."""
        return None if value is None else _as_utc(value)

    @field_validator("decided", "pending")
    @classmethod
    def _utc_values(cls, value: dict[str, datetime]) -> dict[str, datetime]:
        return {k: _as_utc(t) for k, t in value.items()}

    def key(self, interaction_id: str) -> str:
        """How ``decided`` holds an id: its HMAC-SHA256 under this watermark's salt."""
        return _digest(self.salt, interaction_id)

    def taken(self, interaction_id: str, when: datetime) -> bool:
        """Whether this interaction (this id at this time) was decided before: a duplicate
        :meth:`select` would pass over (an id taken for another time is not, so that
        :meth:`select` still names it as reused)."""
        return self.decided.get(self.key(interaction_id)) == when

    def floor(self) -> datetime | None:
        if self.event_time is None:
            return None
        try:
            return self.event_time - timedelta(seconds=self.lateness_seconds)
        except OverflowError:  # before year 1 (a watermark wound back that far by hand)
            return None

    def read_from(self) -> datetime | None:
        """The oldest file modification time a run must read: the floor, or earlier where a
        pending interaction's first piece is older (its file was written after it)."""
        floor = self.floor()
        if floor is None or not self.pending:
            return floor
        return min(floor, *self.pending.values())

    def select(
        self,
        interactions: Iterable[Interaction],
        since: datetime | None,
        now: datetime | None = None,
    ) -> Selection:
        """``now``: the run's clock, for what is pending (None: nothing is kept pending)."""
        floor = self.floor()
        lateness = timedelta(seconds=self.lateness_seconds)
        wait_after = now - lateness if now is not None else None
        # an incomplete trace stamped further ahead than the lateness (a skewed clock, a
        # hostile exporter) would wait until the clock caught up: taken as it is, as a
        # whole record from the future is
        wait_until = now + lateness if now is not None else None
        selection = Selection()
        seen: dict[str, datetime] = {}
        for item in interactions:
            key = self.key(item.id)
            if item.id in seen or key in self.decided:
                selection.duplicates += 1
                taken = seen.get(item.id, self.decided.get(key))
                if taken is not None and taken != item.timestamp:
                    selection.reused.append(_reused(item, taken))
                seen.setdefault(item.id, item.timestamp)
                continue
            elif floor is not None and item.timestamp < floor:
                selection.too_late += 1
            elif since is not None and item.timestamp < since:
                selection.before_since += 1
            elif (
                not item.complete
                and wait_after is not None
                and wait_until is not None
                and wait_after < item.timestamp <= wait_until
            ):
                selection.pending.append(item)
            elif item.unreadable is not None:
                selection.unreadable.append(item.unreadable)
            else:
                selection.new.append(item)
            seen[item.id] = item.timestamp
        return selection

    def advanced(
        self,
        decided: Iterable[Interaction],
        run_id: str | None,
        now: datetime,
        hold: datetime | None = None,
        pending: Iterable[Interaction] = (),
    ) -> Watermark:
        """The watermark after ``decided`` were taken (scored or sampled out). ``hold``: the
        time of the oldest interaction a stopped run left unscored; the watermark moves no
        further, so that one is still new next time, however long the batch. It never moves
        past ``now``; a future-stamped id stays in the set (its time is after the floor) so it
        is still taken once."""
        ids = dict(self.decided)
        latest = self.event_time
        for item in decided:
            ids[self.key(item.id)] = item.timestamp
            latest = item.timestamp if latest is None else max(latest, item.timestamp)
        if hold is not None and latest is not None and latest > hold:
            latest = max(hold, self.event_time) if self.event_time else hold
        if latest is not None and latest > now:
            # A record stamped ahead of the clock (skew, or a hostile log) is taken, but the
            # watermark stops at ``now``: else every honest record after it would be too late
            # (a watermark already pushed ahead by such a record is brought back the same way).
            latest = now
        moved = self.model_copy(update={"event_time": latest})
        floor = moved.floor()
        kept = {k: t for k, t in ids.items() if floor is None or t >= floor}
        runs = [*self.runs, run_id][-KEEP_RUNS:] if run_id else self.runs
        waiting = {self.key(i.id): i.started_at or i.timestamp for i in pending}
        return moved.model_copy(
            update={"decided": kept, "updated_at": now, "runs": runs, "pending": waiting}
        )


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _digest(salt: str, interaction_id: str) -> str:
    body = interaction_id.encode("utf-8", "surrogatepass")
    return hmac.new(salt.encode("ascii"), body, hashlib.sha256).hexdigest()[:32]


def _reused(item: Interaction, taken: datetime) -> RecordProblem:
    file, _, line = item.origin.rpartition(":")
    return RecordProblem(
        file=file or item.origin,
        line=int(line) if line.isdigit() else None,
        field="id",
        message=(
            f"id {item.id!r} was already taken for a record of {taken.isoformat()}; this one "
            f"({item.timestamp.isoformat()}) is another interaction but is passed over as a "
            "duplicate: give each interaction its own id (--map id= a unique field, or an "
            "empty id for a content hash)"
        ),
    )


class WatermarkStore(Protocol):
    def load(self, name: str) -> Watermark | None: ...

    def save(self, watermark: Watermark) -> None: ...


def _parse(data: bytes, where: str) -> Watermark:
    try:
        return Watermark.model_validate_json(data)
    except ValidationError as exc:
        raise MonitorError(
            f"{where}: not a readable watermark ({exc.error_count()} problem(s), first: "
            f"{exc.errors()[0]['msg']}); move it away to start afresh (every interaction "
            "in the logs is then new)"
        ) from None


class LocalWatermarks:
    """Watermarks under a local ``--out`` folder (``<out>/monitor/<name>/watermark.json``)."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir

    def path(self, name: str) -> Path:
        return self.out_dir / watermark_key(name)

    def load(self, name: str) -> Watermark | None:
        path = self.path(name)
        if not path.is_file():
            return None
        return _parse(path.read_bytes(), str(path))

    def save(self, watermark: Watermark) -> None:
        path = self.path(watermark.name)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        try:
            temporary.write_text(watermark.model_dump_json(indent=1), "utf-8")
            os.replace(temporary, path)
        finally:
            temporary.unlink(missing_ok=True)

    @contextmanager
    def locked(self, name: str) -> Iterator[None]:
        """One local monitor of ``name`` at a time (two at once would score the same
        interactions); where there is no ``flock`` (Windows), no lock."""
        folder = self.path(name).parent
        folder.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows
            yield
            return
        with open(folder / ".lock", "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise MonitorError(
                    f"another monitor run of {name!r} is running on {self.out_dir}; wait for "
                    "it to finish (two at once would score the same interactions)"
                ) from None
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


class BucketWatermarks:
    """Watermarks in the run bucket (``monitor/<name>/watermark.json``), for the deployed
    monitor."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    def load(self, name: str) -> Watermark | None:
        data = self.store.get_bytes_or_none(watermark_key(name))
        if data is None:
            return None
        return _parse(data, f"s3://{self.store.bucket}/{watermark_key(name)}")

    def save(self, watermark: Watermark) -> None:
        self.store.put_bytes(
            watermark_key(watermark.name),
            watermark.model_dump_json(indent=1).encode("utf-8"),
            "application/json",
            redact=False,
        )


def fresh(name: str, source: str, lateness_seconds: float) -> Watermark:
    return Watermark(name=name, source=source, lateness_seconds=lateness_seconds)


def now_utc() -> datetime:
    return datetime.now(UTC)
