"""The runs a source holds, read through the report models the reports are made from.

The runs page needs a few fields of every run's ``summary.json`` (:class:`RunEntry`, a
projection of :class:`~evalrunner.reports.summary.RunSummary` with the same field types);
a run's pages need its ``report.json`` (:class:`~evalrunner.reports.model.ReportData`, held
as a :class:`~evalrunner.viewer.loaded.LoadedRun`).
Both are cached by the object's version (mtime and size, or the S3 ETag), so a page view reads
nothing twice, a run that finishes while the viewer is open appears on the next page load,
and a 10,000-case run is parsed once, not on every page of its case table.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalrunner.errors import ObjectMissing, StorageError
from evalrunner.reports.model import Gate
from evalrunner.reports.summary import MetricSummary
from evalrunner.reports.verdict import RunVerdict
from evalrunner.viewer.loaded import LoadedRun
from evalrunner.viewer.source import Source, Stat

SUMMARY = "summary.json"
#: Whole reports kept parsed at once (a 10,000-case report is the large part of the memory).
REPORTS_KEPT = 3
#: The largest summary.json read (a demo run's is ~60 KB, its 31 metric summaries the bulk).
MAX_SUMMARY_BYTES = 4_000_000
#: How long a listing of the summaries is reused: a run that finishes shows within this.
LIST_SECONDS = 2.0
#: The start stamp a run's id begins with (``pipeline.prepare.new_run_id``); its report
#: prefix, claimed at the same moment, begins with the same stamp (``<target>/<stamp>-``).
ID_STAMP = re.compile(r"\d{6}-\d{6}-")
#: The ids evalrunner makes and accepts (``event_schema.RUN_ID_PATTERN``, repeated here so the
#: viewer does not import the event model and the target registry behind it; a test holds
#: them equal). An id goes into every link, redirect and htmx address of a run's pages
#: unquoted, so a summary whose id holds ``/``, ``..``, ``?`` or ``#`` (copied or edited by
#: hand) is named unreadable rather than linked to another run's page.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class RunEntry(BaseModel):
    """What the runs page shows of one run: the summary's own fields, nothing recomputed."""

    model_config = ConfigDict(extra="ignore")

    run_id: str = Field(pattern=RUN_ID.pattern)
    target: str
    suite: str
    started_at: str
    finished_at: str = ""
    iterations: int = 1
    cases: int = 0
    items: int = 0
    target_errors: int = 0
    partial: bool = False
    #: the primary metrics only (all the runs page shows; a run's page reads its report)
    metrics: list[MetricSummary] = Field(default_factory=list)
    gates: list[Gate] = Field(default_factory=list)
    gates_passed: bool = True
    verdict: RunVerdict | None = None
    #: Where its files are: ``<folder>/<stamp>-`` relative to the served root.
    prefix: str = ""

    @field_validator("metrics")
    @classmethod
    def _primary_only(cls, metrics: list[MetricSummary]) -> list[MetricSummary]:
        """Kept for every run the source holds, so only what is shown is kept: a demo run's
        31 metric summaries, 13 of them primary, were most of an entry's 58 KB, and 1,000
        runs' entries were 58 MB of the server's memory (bench/RESULTS.md, issue 33)."""
        return [m for m in metrics if m.primary]

    @property
    def outcome(self) -> str:
        return self.verdict.headline if self.verdict else "—"

    def primary(self) -> list[MetricSummary]:
        return [m for m in self.metrics if m.primary]


class NotFound(ObjectMissing):
    """A run, case or file the source does not hold."""


class RunStore:
    """Every run under a source, and each run's report on demand (thread-safe: the server
    answers requests from a thread pool)."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[str, RunEntry | None]] = {}
        self._reports: OrderedDict[str, tuple[str, LoadedRun]] = OrderedDict()
        self._listed: tuple[float, list[Stat]] | None = None
        #: Summaries that could not be read, with why (shown on the runs page, not hidden).
        self.unreadable: dict[str, str] = {}

    def _entry(self, stat: Stat) -> RunEntry | None:
        cached = self._entries.get(stat.key)
        if cached is not None and cached[0] == stat.version:
            return cached[1]
        entry: RunEntry | None
        if stat.size is not None and stat.size > MAX_SUMMARY_BYTES:
            # every summary is read for the runs page: one huge object (a bucket others
            # write to) would hold the whole page up, or the server's memory
            self.unreadable[stat.key] = (
                f"{stat.size:,} bytes; a run's summary is a few KB, so it is not read"
            )
            self._entries[stat.key] = (stat.version, None)
            return None
        try:
            entry = RunEntry.model_validate_json(self.source.read(stat.key))
            entry.prefix = stat.key[: -len(SUMMARY)]
            self.unreadable.pop(stat.key, None)
        except (ValidationError, OSError, ValueError, StorageError) as exc:
            # StorageError: a listed key the source will not read (``..`` in a bucket key),
            # or an object gone since the listing: that run is named unreadable, not fatal
            entry = None
            self.unreadable[stat.key] = str(exc).splitlines()[0][:200]
        self._entries[stat.key] = (stat.version, entry)
        return entry

    def _summaries(self) -> list[Stat]:
        """The summary files, listed at most once per :data:`LIST_SECONDS` (a page view calls
        this several times; over S3 a listing is one request per 1,000 objects)."""
        now = time.monotonic()
        if self._listed is None or now - self._listed[0] > LIST_SECONDS:
            stats = [s for s in self.source.list(SUMMARY) if s.key.endswith(f"-{SUMMARY}")]
            self._listed = (now, stats)
        return self._listed[1]

    def runs(self) -> list[RunEntry]:
        """Every readable run, newest first."""
        with self._lock:
            stats = self._summaries()
            seen = {s.key for s in stats}
            for key in [k for k in self._entries if k not in seen]:
                del self._entries[key]
            entries = [e for e in (self._entry(s) for s in stats) if e is not None]
        return sorted(entries, key=lambda e: (e.started_at, e.run_id), reverse=True)

    def run(self, run_id: str) -> RunEntry:
        """The run with this id, or :class:`NotFound` (the id is looked up, never used as a
        path: a URL cannot name a file the listing did not find).

        A run's id starts with the stamp its report files are named by, so the summaries
        listed under that stamp are read first (one, or a few): opening a run from a freshly
        started server does not read every run's summary (about 0.4 s for 1,000 runs,
        bench/RESULTS.md, issue 33). An id without that stamp, or one whose run was started
        a moment before its prefix was claimed (a deployed run's id is made by the caller),
        is found by reading them all, as the runs page does."""
        stamp = ID_STAMP.match(run_id)
        if stamp is not None:
            with self._lock:
                named = [
                    self._entry(s)
                    for s in self._summaries()
                    if s.key.rsplit("/", 1)[-1].startswith(stamp.group(0))
                ]
            found = [e for e in named if e is not None and e.run_id == run_id]
            if found:  # the newest, as below, if a copied folder repeats an id
                return max(found, key=lambda e: (e.started_at, e.run_id))
        for entry in self.runs():
            if entry.run_id == run_id:
                return entry
        raise NotFound(f"no run {run_id[:80]!r} under {self.source.label}")

    def report(self, run_id: str) -> LoadedRun:
        """The run's report data (report.json), parsed once per version."""
        entry = self.run(run_id)
        key = f"{entry.prefix}report.json"
        version = self.source.version(key)
        if version is None:
            raise NotFound(f"run {run_id}: its report.json is missing under {self.source.label}")
        with self._lock:
            cached = self._reports.get(run_id)
            if cached is not None and cached[0] == version:
                self._reports.move_to_end(run_id)
                return cached[1]
        try:
            data = LoadedRun(self.source.read(key))
        except (ValidationError, ValueError) as exc:
            raise NotFound(f"run {run_id}: {key} is not an evalrunner report ({exc})") from None
        with self._lock:
            self._reports[run_id] = (version, data)
            while len(self._reports) > REPORTS_KEPT:
                self._reports.popitem(last=False)
        return data
