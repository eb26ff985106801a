"""Read every log file at a location with its source kind (named, or told by the file)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from evalrunner.monitor.locations import list_files
from evalrunner.monitor.model import MonitorError, SourceRead
from evalrunner.monitor.sources import source_kinds, source_named

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
) -> SourceRead:
    """Every interaction at ``location`` and a problem for each record (or file) that could
    not be read; one bad record or file never loses the others."""
    if fmt != AUTO:
        source_named(fmt)(mapping)  # a bad --format or --map is refused before reading
    elif mapping:
        for kind in ("jsonl", "csv"):
            source_named(kind)(mapping)
    listing = list_files(location, older_than, s3)
    read = SourceRead(files_skipped=listing.skipped, problems=list(listing.problems))
    if not listing.files and not listing.skipped and not listing.problems:
        raise MonitorError(
            f"SOURCE {location}: no log files there (looked for "
            ".jsonl, .json, .ndjson, .csv, .log, .txt, optionally .gz)"
        )
    # every file of a kind goes to its source at once, so a trace cut across files (or
    # export batches) is joined into one interaction whatever the split
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for file in listing.files:
        text = file.data.decode("utf-8-sig", errors="replace")
        kind = fmt if fmt != AUTO else detect(file.name, text)
        by_kind.setdefault(kind, []).append((file.name, text))
    for kind, files in by_kind.items():
        source = source_kinds()[kind](mapping if source_named(kind).mappable else None)
        source.s3 = s3  # a record's body stored apart is read with the same credentials
        read.extend(source.read_all(files))
    return read
