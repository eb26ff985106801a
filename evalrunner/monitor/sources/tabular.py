"""JSONL and CSV logs of your own: one interaction per line or row.

Default columns (first found wins; ``--map field=column`` names yours, a dotted path into a
JSONL record such as ``--map answer=response.text`` works too):

===========  ==========================================================================
field        columns looked for
===========  ==========================================================================
id           ``id``, ``interaction_id``, ``request_id``, ``trace_id`` (else a content hash)
question     ``question``, ``input``, ``prompt``, ``user_input``, ``query``
answer       ``answer``, ``output``, ``response``, ``completion``, ``actual_answer``
contexts     ``contexts``, ``retrieved_contexts``, ``context`` (list, JSON array or text)
steps        ``steps`` (list of tool names or ``{"name", "arguments"}``)
session      ``session``, ``session_id``, ``conversation_id``
timestamp    ``timestamp``, ``time``, ``ts``, ``created_at`` (ISO 8601 or epoch)
===========  ==========================================================================
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from evalrunner.monitor.model import Interaction, RecordProblem, SourceRead, content_id
from evalrunner.monitor.sources.base import (
    BadField,
    Source,
    dig,
    json_lines,
    per_record,
    register_source,
    required_text,
    text_list,
    text_of,
    timestamp,
)
from evalrunner.targets.steps import steps_from_json

ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("id", "interaction_id", "request_id", "trace_id"),
    "question": ("question", "input", "prompt", "user_input", "query"),
    "answer": ("answer", "output", "response", "completion", "actual_answer"),
    "contexts": ("contexts", "retrieved_contexts", "context"),
    "steps": ("steps",),
    "session": ("session", "session_id", "conversation_id"),
    "timestamp": ("timestamp", "time", "ts", "created_at"),
}


class _Tabular(Source):
    mappable: ClassVar[bool] = True

    def _get(self, record: Mapping[str, Any], field: str) -> tuple[str, Any]:
        """(the column used, its value) for ``field``."""
        if field in self.mapping:
            column = self.mapping[field]
            return column, dig(record, column)
        for column in ALIASES[field]:
            if column in record:
                return column, record[column]
        return ALIASES[field][0], None

    def build(self, record: Any, origin: str) -> Interaction:
        if not isinstance(record, Mapping):
            raise BadField(None, f"a {type(record).__name__}, not an object with a question")
        values = {f: self._get(record, f) for f in ALIASES}
        question = required_text(values["question"][1], values["question"][0])
        answer = required_text(values["answer"][1], values["answer"][0])
        contexts = text_list(values["contexts"][1], values["contexts"][0])
        raw_steps = values["steps"][1]
        if isinstance(raw_steps, str) and raw_steps.strip().startswith("["):
            try:
                raw_steps = json.loads(raw_steps)
            except ValueError:
                raise BadField(values["steps"][0], "not a JSON array of steps") from None
        if raw_steps not in (None, "", []) and not isinstance(raw_steps, list):
            raise BadField(values["steps"][0], "give a list of tool names or step objects")
        steps = steps_from_json(raw_steps) if raw_steps else []
        session = text_of(values["session"][1], values["session"][0], required=False)
        when = timestamp(values["timestamp"][1], values["timestamp"][0])
        own = text_of(values["id"][1], values["id"][0], required=False)
        return Interaction(
            id=own or content_id(self.name, question, answer, when, session, contexts),
            id_kind="record" if own else "content",
            question=question,
            answer=answer,
            contexts=contexts,
            steps=steps,
            session=session,
            timestamp=when,
            origin=origin,
            source=self.name,
        )


@register_source
class JsonlSource(_Tabular):
    """One JSON object per line (your application's own log)."""

    name = "jsonl"
    summary = "JSON Lines: one object per interaction (question, answer, contexts, ...)"

    def read(self, file: str, text: str) -> SourceRead:
        return per_record(file, json_lines(file, text), self.build)


@register_source
class CsvSource(_Tabular):
    """A CSV file with a header row: one interaction per row (line numbers count the
    header as line 1)."""

    name = "csv"
    summary = "CSV with a header row: one interaction per row"

    def read(self, file: str, text: str) -> SourceRead:
        return per_record(file, _csv_rows(file, text), self.build)


def _csv_rows(file: str, text: str) -> Iterator[tuple[int | None, Any] | RecordProblem]:
    reader = csv.DictReader(io.StringIO(text))
    try:
        for row in reader:
            cleaned = {k: v for k, v in row.items() if k is not None and v not in (None, "")}
            if None in row:
                yield RecordProblem(
                    file=file,
                    line=reader.line_num,
                    message="more cells than the header has columns",
                )
                continue
            if cleaned:
                yield reader.line_num, cleaned
    except csv.Error as exc:
        yield RecordProblem(file=file, line=reader.line_num, message=f"not valid CSV ({exc})")
