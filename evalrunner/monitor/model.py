"""What a source reads: interactions (cases with no expected answer) and the problems of the
records it could not read, each naming its file, line and field, so one bad record never
loses the good ones around it."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalrunner.errors import EvalRunnerError
from evalrunner.targets.steps import AgentStep


class MonitorError(EvalRunnerError):
    """A monitor option, source or watermark cannot be used (bad input: nothing is scored)."""

    code = "InvalidMonitorInput"


class Interaction(BaseModel):
    """One question the production system answered, as a source read it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: Stable identity: the record's own id where the log has one (``id_kind="record"``),
    #: else a hash of its content and time (``"content"``), so a record delivered twice has
    #: the same id and is scored once.
    id: str
    id_kind: Literal["record", "content"]
    question: str
    answer: str
    contexts: list[str] = Field(default_factory=list)
    steps: list[AgentStep] = Field(default_factory=list)
    session: str | None = None
    #: When it happened (event time, UTC): what the watermark advances on.
    timestamp: datetime
    #: ``file:line`` (or ``file``) it was read from, for messages.
    origin: str
    #: The source kind that read it.
    source: str
    #: False for an OpenTelemetry trace whose root span has not been read yet: more of it
    #: may come (the watermark keeps it pending, up to the allowed lateness).
    complete: bool = True
    #: When its earliest piece started (a trace's first span), where that differs from
    #: ``timestamp``: the files holding its pieces are read again while it is pending.
    started_at: datetime | None = None
    #: Why it cannot be scored as read: an incomplete trace whose question or answer has not
    #: come yet (they are on its root span, exported last). It waits while pending like any
    #: other; once no longer pending this is its problem line, and it is not scored.
    unreadable: RecordProblem | None = None

    @field_validator("timestamp", "started_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def content_id(
    source: str,
    question: str,
    answer: str,
    timestamp: datetime,
    session: str | None,
    contexts: list[str],
) -> str:
    """The id of a record that carries none: a SHA-256 of what was asked and answered, when,
    in which session and with which contexts (a re-delivered copy hashes the same; the same
    question asked again later does not)."""
    stamp = timestamp.astimezone(UTC).isoformat() if timestamp.tzinfo else timestamp.isoformat()
    body = json.dumps([source, question, answer, stamp, session, contexts], ensure_ascii=False)
    return "sha256:" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]


#: The longest problem message kept whole (a bad value can be megabytes long).
_PROBLEM_CHARS = 400


class RecordProblem(BaseModel):
    """A record a source could not read; the others are read all the same."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str
    line: int | None = None
    field: str | None = None
    message: str

    @field_validator("file")
    @classmethod
    def _key_safe_to_print(cls, file: str) -> str:
        """A log's key may name the user (``logs/user=jo@ex.com/part-0.jsonl``)."""
        from evalrunner.privacy import mask_pii

        return mask_pii(file)

    @field_validator("message")
    @classmethod
    def _safe_to_print(cls, message: str) -> str:
        """A problem quotes the bad value, and problem lines reach the terminal, ``--json``,
        the deployed function's reply and its log: the value is PII-masked (as the texts
        scored are) and a long one is cut in the middle, keeping the how-to-fix at the end."""
        from evalrunner.privacy import mask_pii

        masked = mask_pii(message)
        if len(masked) <= _PROBLEM_CHARS:
            return masked
        half = _PROBLEM_CHARS // 2
        return (
            f"{masked[:half]} … ({len(masked) - 2 * half:,} characters left out) … {masked[-half:]}"
        )

    def text(self) -> str:
        where = self.file
        if self.line is not None:
            where += f" line {self.line}"
        if self.field:
            where += f", field '{self.field}'"
        return f"{where}: {self.message}"


Interaction.model_rebuild()  # its ``unreadable`` is a RecordProblem, defined after it


class SourceRead(BaseModel):
    """What reading one or more files gave: the interactions and the records refused."""

    model_config = ConfigDict(extra="forbid")

    interactions: list[Interaction] = Field(default_factory=list)
    problems: list[RecordProblem] = Field(default_factory=list)
    #: Files read (and, for a watermark, files skipped as older than it could want).
    files: int = 0
    files_skipped: int = 0
    #: Records passed over before they were built as ones the watermark already took
    #: (duplicates, told apart early so nothing more is fetched for them).
    already_taken: int = 0

    def extend(self, other: SourceRead) -> None:
        self.interactions.extend(other.interactions)
        self.problems.extend(other.problems)
        self.already_taken += other.already_taken
        self.files += other.files
        self.files_skipped += other.files_skipped
