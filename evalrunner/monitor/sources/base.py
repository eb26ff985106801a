"""The source contract and its registry: each source kind is a small class registered by
name, turning the text of one file into interactions and the problems of its bad records."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar, TypeVar

from evalrunner.monitor.model import MonitorError, RecordProblem, SourceRead

#: The fields an interaction has; a column mapping may rename any of them.
FIELDS = ("id", "question", "answer", "contexts", "steps", "session", "timestamp")


class Source(ABC):
    """Reads one kind of log. ``mapping``: interaction field -> the record's own name for it
    (a column, or a dotted path into a JSON record), for the sources that take one."""

    name: ClassVar[str]
    summary: ClassVar[str]
    #: Whether ``--map`` applies (the tabular sources); the others read a fixed format.
    mappable: ClassVar[bool] = False
    #: Whether one interaction may be cut across files (an OpenTelemetry trace): the reader
    #: then hands this source every file of its kind at once (:meth:`read_all`); the others
    #: get one file at a time, so only that file's text is held.
    joins_files: ClassVar[bool] = False
    #: The boto3 S3 client the location is read with (:func:`..reading.read_location` sets
    #: it; None: the default credentials), for a source whose records point into S3.
    s3: Any = None
    #: Whether the watermark already took a record of this id and time (set by the reader
    #: from the watermark; None: nothing taken). A source that must fetch more to build a
    #: record (a Bedrock body stored apart) asks first and raises :class:`AlreadyTaken`, so
    #: a record read again inside the lateness window costs no fetch.
    already_taken: Callable[[str, datetime], bool] | None = None

    def __init__(self, mapping: Mapping[str, str] | None = None) -> None:
        mapping = dict(mapping or {})
        if mapping and not self.mappable:
            raise MonitorError(
                f"--map: the {self.name} source reads a fixed record shape and takes no "
                "column mapping; --map applies to jsonl and csv"
            )
        unknown = sorted(set(mapping) - set(FIELDS))
        if unknown:
            raise MonitorError(
                f"--map: unknown field(s) {', '.join(unknown)}; map one of {', '.join(FIELDS)} "
                "to your column, e.g. --map question=prompt"
            )
        self.mapping = mapping

    @abstractmethod
    def read(self, file: str, text: str) -> SourceRead:
        """The interactions of one file's text (``file`` names it in problems)."""

    def read_all(self, files: Sequence[tuple[str, str]]) -> SourceRead:
        """The interactions of every file of this kind one run reads, as (name, text). Each
        file is read alone here; a source whose interaction may be cut across files (an
        OpenTelemetry trace) overrides this to join the pieces. A file refused whole is a
        problem naming it; the other files are still read."""
        read = SourceRead()
        for file, text in files:
            try:
                read.extend(self.read(file, text))
            except MonitorError as exc:
                read.problems.append(RecordProblem(file=file, message=exc.message))
        return read


S = TypeVar("S", bound=type[Source])
_SOURCES: dict[str, type[Source]] = {}


def register_source(cls: S) -> S:
    _SOURCES[cls.name] = cls
    return cls


def source_kinds() -> dict[str, type[Source]]:
    """Every source kind by name."""
    return dict(_SOURCES)


def source_named(name: str) -> type[Source]:
    try:
        return _SOURCES[name]
    except KeyError:
        raise MonitorError(
            f"--format {name!r}: no such source; use one of {', '.join(sorted(_SOURCES))}"
        ) from None


# ------------------------------------------------------------------------- shared readers


class BadField(Exception):
    """A field of one record is missing or malformed (becomes a RecordProblem)."""

    def __init__(self, field: str | None, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


class AlreadyTaken(Exception):
    """The record is one the watermark took before (counted as a duplicate, not built)."""


def json_lines(file: str, text: str) -> Iterator[tuple[int, Any] | RecordProblem]:
    """Each non-empty line's JSON value with its line number, or the problem of a line that
    is not JSON."""
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except ValueError as exc:
            yield RecordProblem(file=file, line=number, message=f"not valid JSON ({exc})")


def per_record(
    file: str,
    records: Iterator[tuple[int | None, Any] | RecordProblem],
    build: Callable[[Any, str], Any],
) -> SourceRead:
    """Build each record, keeping the good ones and a problem for each bad one."""
    read = SourceRead(files=1)
    for item in records:
        if isinstance(item, RecordProblem):
            read.problems.append(item)
            continue
        line, record = item
        origin = f"{file}:{line}" if line is not None else file
        try:
            built = build(record, origin)
        except AlreadyTaken:
            read.already_taken += 1
            continue
        except BadField as exc:
            read.problems.append(
                RecordProblem(file=file, line=line, field=exc.field, message=exc.message)
            )
            continue
        if isinstance(built, list):
            read.interactions.extend(built)
        elif built is not None:
            read.interactions.append(built)
    return read


def timestamp(value: Any, field: str = "timestamp") -> datetime:
    """An ISO 8601 time, or epoch seconds / milliseconds / nanoseconds (by magnitude)."""
    if isinstance(value, bool) or value is None or value == "":
        raise BadField(field, "missing: every interaction needs its time (ISO 8601 or epoch)")
    if isinstance(value, int | float) or (isinstance(value, str) and _is_number(value)):
        number = float(value)
        if number > 1e17:  # nanoseconds (OTLP)
            number /= 1e9
        elif number > 1e11:  # milliseconds
            number /= 1e3
        try:
            return datetime.fromtimestamp(number, UTC)
        except (OverflowError, OSError, ValueError):
            raise BadField(field, f"{value!r} is not a time") from None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise BadField(
                field, f"{value[:40]!r} is not a time; give ISO 8601 (2026-01-31T12:00:00Z)"
            ) from None
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    raise BadField(field, f"a {type(value).__name__} is not a time")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def text_of(value: Any, field: str, *, required: bool = True) -> str | None:
    """A text field: a string (numbers are written out); missing or blank is a problem
    when ``required``."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise BadField(field, "missing or empty")
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    raise BadField(field, f"a {type(value).__name__} where text was expected")


def required_text(value: Any, field: str) -> str:
    """A text field that must be there (missing or blank is a problem naming it)."""
    text = text_of(value, field)
    if text is None:  # text_of refuses it first; kept for the type checker
        raise BadField(field, "missing or empty")
    return text


def text_list(value: Any, field: str) -> list[str]:
    """Contexts: a list of strings (or of ``{"text"|"content": ...}`` objects), a JSON array
    in a string (a CSV cell), or one string."""
    if value is None or value == "":
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except ValueError:
                raise BadField(field, "starts with '[' but is not a JSON array") from None
        else:
            return [value]
    if not isinstance(value, list):
        raise BadField(field, f"a {type(value).__name__} where a list of texts was expected")
    texts = []
    for item in value:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, Mapping):
            inner = item.get("text", item.get("content"))
            if isinstance(inner, str):
                texts.append(inner)
            elif isinstance(inner, Mapping) and isinstance(inner.get("text"), str):
                texts.append(inner["text"])
            else:
                raise BadField(field, "an item without text (give strings or {'text': ...})")
        else:
            raise BadField(field, f"an item that is a {type(item).__name__}, not text")
    return texts


def dig(record: Any, path: str) -> Any:
    """``record["a"]["b"]`` for ``"a.b"`` (a key with dots is tried whole first)."""
    if isinstance(record, Mapping) and path in record:
        return record[path]
    current = record
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
    return current
