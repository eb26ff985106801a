"""Read every log file at a location with its source kind (named, or told by the file)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from evalrunner.monitor.locations import LogFile, list_files, read_ahead
from evalrunner.monitor.model import MonitorError, RecordProblem, SourceRead
from evalrunner.monitor.sources import source_kinds, source_named
from evalrunner.monitor.sources.base import Source

AUTO = "auto"


def detect(name: str, text: str) -> str:
    """The source kind a file is written in: ``.csv`` by its name, JSON by its first record
    (``resourceSpans``: otel; a ``ModelInvocationLog``: bedrock-invocations; ``inputText``
    with its ``completion`` events: bedrock-agent-traces; anything else: jsonl)."""
    base = name[:-3] if name.endswith(".gz") else name
    if base.lower().endswith(".csv"):
        return "csv"
    first: Any = None
    try:
        first = json.loads(text)
    except ValueError:
        line = next((ln for ln in text.splitlines() if ln.strip()), "")
        try:
            first = json.loads(line)
        except ValueError:
            return "jsonl"
    if isinstance(first, list) and first:
        first = first[0]
    if not isinstance(first, Mapping):
        return "jsonl"
    if "resourceSpans" in first:
        return "otel"
    if first.get("schemaType") == "ModelInvocationLog" or ("modelId" in first and "input" in first):
        return "bedrock-invocations"
    if "inputText" in first and ("completion" in first or "events" in first):
        return "bedrock-agent-traces"
    return "jsonl"


def read_location(
    location: str,
    fmt: str = AUTO,
    mapping: Mapping[str, str] | None = None,
    *,
    older_than: datetime | None = None,
    s3: Any = None,
    out_dir: Path | None = None,
    already_taken: Callable[[str, datetime], bool] | None = None,
) -> SourceRead:
    """Every interaction at ``location`` and a problem for each record (or file) that could
    not be read; one bad record or file never loses the others. ``already_taken(id, time)``:
    the watermark's test, for a source that would fetch more to build a record it took."""
    if fmt != AUTO:
        source_named(fmt)(mapping)  # a bad --format or --map is refused before reading
    elif mapping:
        for kind in ("jsonl", "csv"):
            source_named(kind)(mapping)
    listing = list_files(location, older_than, s3, out_dir)
    read = SourceRead(files_skipped=listing.skipped, problems=list(listing.problems))
    if not listing.files and not listing.skipped and not listing.problems:
        raise MonitorError(
            f"SOURCE {location}: no log files there (looked for "
            ".jsonl, .json, .ndjson, .csv, .log, .txt, optionally .gz)"
        )
    # one file at a time (a few fetched ahead, within a budget of bytes), so only those
    # bytes and one file's text are held, except for a kind whose
    # interaction may be cut across files (an OpenTelemetry trace, ``joins_files``): its
    # files go to its source together, so the pieces are joined whatever the split
    joined: dict[str, list[tuple[str, str]]] = {}
    for file, data in read_ahead(listing.files):  # fetched a few at once, handed on in order
        try:
            if isinstance(data, MonitorError):
                raise data
            kind, text = _kind_and_text(file, data, fmt)
            if source_kinds()[kind].joins_files:
                joined.setdefault(kind, []).append((file.name, text))
            else:
                read.extend(_source(kind, mapping, s3, already_taken).read_all([(file.name, text)]))
        except MonitorError as exc:
            read.problems.append(RecordProblem(file=file.name, message=exc.message))
    for kind, files in joined.items():
        read.extend(_source(kind, mapping, s3, already_taken).read_all(files))
    return read


def _kind_and_text(file: LogFile, data: bytes, fmt: str) -> tuple[str, str]:
    """A file's source kind and text."""
    text = data.decode("utf-8-sig", errors="replace")
    return (fmt if fmt != AUTO else detect(file.name, text)), text


def _source(
    kind: str,
    mapping: Mapping[str, str] | None,
    s3: Any,
    already_taken: Callable[[str, datetime], bool] | None,
) -> Source:
    source = source_kinds()[kind](mapping if source_named(kind).mappable else None)
    source.s3 = s3  # a record's body stored apart is read with the same credentials
    source.already_taken = already_taken
    return source
