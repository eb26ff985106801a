"""Amazon Bedrock model-invocation logs, as Bedrock delivers them to S3
(``AWSLogs/<account>/BedrockModelInvocationLogs/<region>/yyyy/mm/dd/hh/*.json.gz``): gzip
files of JSON records, one per line, in the documented shape::

    {"schemaType": "ModelInvocationLog", "schemaVersion": "1.0",
     "timestamp": "2026-01-31T12:00:00Z", "requestId": "…", "operation": "Converse",
     "modelId": "anthropic.claude-3-haiku-…",
     "input": {"inputContentType": "application/json", "inputBodyJson": {…}},
     "output": {"outputContentType": "application/json", "outputBodyJson": {…}}}

id ``requestId``; time ``timestamp``; question: the last user message of ``inputBodyJson``
(Converse and the Messages API: ``messages[].content`` as text or ``[{"text"}]`` blocks;
else ``prompt`` / ``inputText`` / ``message``); answer: Converse's ``output.message.content``,
the Messages API's ``content``, ``completion``, ``results[0].outputText`` (Titan),
``generation`` (Llama), ``outputs[0].text`` (Mistral), ``generations[0].text`` / ``text``
(Cohere), or a ConverseStream's ``contentBlockDelta`` events joined. A body Bedrock wrote to
S3 separately (``inputBodyS3Path`` / ``outputBodyS3Path``, over 100 KB: the logging
configuration's ``largeDataDeliveryS3Config``) is read from there with the same S3 client
as the logs, gzip or not, up to :data:`MAX_BODY_BYTES`; a bigger one, or one that cannot be
read, is a problem naming the record's ``requestId`` and the path. Embedding
and image calls have no text answer and are passed over with no problem.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator, Mapping
from typing import Any

from evalrunner.http_client import ResponseTooLarge
from evalrunner.monitor.locations import split_s3
from evalrunner.monitor.model import Interaction, RecordProblem, SourceRead
from evalrunner.monitor.sources.base import (
    AlreadyTaken,
    BadField,
    Source,
    json_lines,
    per_record,
    register_source,
    required_text,
    timestamp,
)
from evalrunner.targets._common import read_capped

#: The most bytes one body stored apart in S3 may be, as stored and unpacked (Bedrock stores
#: bodies over 100 KB apart; a long-context prompt is a few MB).
MAX_BODY_BYTES = 32 * 1024 * 1024
#: Operations with no text answer to score (embeddings, images).
_NO_TEXT = ("embed", "image")


@register_source
class BedrockInvocationSource(Source):
    """Bedrock model-invocation log records (gzip JSON lines in S3)."""

    name = "bedrock-invocations"
    summary = "Amazon Bedrock model-invocation logs (ModelInvocationLog records, .json.gz)"

    def read(self, file: str, text: str) -> SourceRead:
        return per_record(file, _records(file, text), self.build)

    def build(self, record: Any, origin: str) -> Interaction | None:
        if not isinstance(record, Mapping):
            raise BadField(None, "not a JSON object")
        if record.get("schemaType") not in (None, "ModelInvocationLog"):
            raise BadField("schemaType", f"{record.get('schemaType')!r} is not ModelInvocationLog")
        model = str(record.get("modelId") or "")
        operation = str(record.get("operation") or "")
        if any(word in (model + operation).lower() for word in _NO_TEXT):
            return None
        inputs = record.get("input")
        outputs = record.get("output")
        if not isinstance(inputs, Mapping):
            raise BadField("input", "missing: the record has no input object")
        if not isinstance(outputs, Mapping):
            raise BadField("output", "missing: the record has no output object")
        request = required_text(record.get("requestId"), "requestId")
        when = timestamp(record.get("timestamp"))
        stored_apart = any(
            side.get(key.replace("S3Path", "Json")) is None and side.get(key)
            for side, key in ((inputs, "inputBodyS3Path"), (outputs, "outputBodyS3Path"))
        )
        if stored_apart and self.already_taken is not None and self.already_taken(request, when):
            raise AlreadyTaken  # a duplicate: its bodies are not fetched again
        bodies = []
        for side, key in ((inputs, "inputBodyS3Path"), (outputs, "outputBodyS3Path")):
            body = side.get(key.replace("S3Path", "Json"))
            if body is None and side.get(key):
                body = self._stored_body(side[key], key, record.get("requestId"))
            bodies.append(body)
        question = _question(bodies[0])
        if question is None:
            raise BadField("input.inputBodyJson", "no user message or prompt text found")
        answer = _answer(bodies[1])
        if answer is None:
            raise BadField("output.outputBodyJson", "no answer text found")
        return Interaction(
            id=request,
            id_kind="record",
            question=question,
            answer=answer,
            timestamp=when,
            origin=origin,
            source=self.name,
        )

    def _stored_body(self, path: Any, field: str, request: Any) -> Any:
        """The JSON body Bedrock stored at ``path`` (``s3://bucket/key``), read no further
        than :data:`MAX_BODY_BYTES` (packed or unpacked)."""
        from botocore.exceptions import BotoCoreError, ClientError

        record = f"record {str(request)[:100]!r}" if request else "the record"
        where = str(path)[:300]
        if not isinstance(path, str) or not path.startswith("s3://") or "/" not in path[5:]:
            raise BadField(field, f"{record}: {where!r} is not an s3://bucket/key path")
        bucket, key = split_s3(path)
        too_big = (
            f"{record}: the body at {where} is over {MAX_BODY_BYTES:,} bytes and is not read "
            "(the monitor scores bodies up to that size)"
        )
        try:
            if self.s3 is None:
                import boto3

                self.s3 = boto3.client("s3")
            stream = self.s3.get_object(Bucket=bucket, Key=key)["Body"]
            data = read_capped(stream, MAX_BODY_BYTES, where)
        except ResponseTooLarge:
            raise BadField(field, too_big) from None
        except (ClientError, BotoCoreError) as exc:
            raise BadField(field, f"{record}: cannot read the body at {where} ({exc})") from None
        if data[:2] == b"\x1f\x8b":
            try:
                with gzip.GzipFile(fileobj=io.BytesIO(data)) as unzipped:
                    data = unzipped.read(MAX_BODY_BYTES + 1)
            except (OSError, EOFError, zlib.error) as exc:
                raise BadField(
                    field, f"{record}: the body at {where} is not readable gzip ({exc})"
                ) from None
            if len(data) > MAX_BODY_BYTES:
                raise BadField(field, too_big)
        try:
            return json.loads(data.decode("utf-8-sig", errors="replace"))
        except ValueError:
            raise BadField(field, f"{record}: the body at {where} is not JSON") from None


def _records(file: str, text: str) -> Iterator[tuple[int | None, Any] | RecordProblem]:
    """JSON lines; a file that is one JSON array (or object) is read whole."""
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and "\n{" not in stripped):
        try:
            whole = json.loads(text)
        except ValueError:
            whole = None
        if isinstance(whole, list):
            yield from ((None, item) for item in whole)
            return
        if isinstance(whole, Mapping):
            yield (1, whole)
            return
    yield from json_lines(file, text)


def _blocks(content: Any) -> str | None:
    """Text of a message's content: a string, or ``[{"text"}]`` / ``[{"type": "text"}]``."""
    if isinstance(content, str):
        return content if content.strip() else None
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, Mapping) and isinstance(block.get("text"), str)
        ]
        joined = "".join(texts)
        return joined if joined.strip() else None
    return None


def _question(body: Any) -> str | None:
    if not isinstance(body, Mapping):
        return None
    messages = body.get("messages")
    if isinstance(messages, list):
        for message in reversed(messages):
            if isinstance(message, Mapping) and message.get("role") == "user":
                text = _blocks(message.get("content"))
                if text:
                    return text
    for key in ("inputText", "prompt", "message"):
        value = body.get(key)
        if isinstance(value, str) and value.strip():
            return _strip_turns(value) if key == "prompt" else value
    return None


def _strip_turns(prompt: str) -> str:
    """Claude v2's ``\\n\\nHuman: … \\n\\nAssistant:`` prompt: the last human turn."""
    if "Human:" in prompt:
        prompt = prompt.rsplit("Human:", 1)[1]
        prompt = prompt.split("Assistant:", 1)[0]
    return prompt.strip()


def _answer(body: Any) -> str | None:
    if isinstance(body, list):  # ConverseStream: the stream's events
        deltas = [
            ((event.get("contentBlockDelta") or {}).get("delta") or {}).get("text")
            for event in body
            if isinstance(event, Mapping)
        ]
        joined = "".join(d for d in deltas if isinstance(d, str))
        return joined if joined.strip() else None
    if not isinstance(body, Mapping):
        return None
    output = body.get("output")
    if isinstance(output, Mapping):  # Converse, Nova
        text = _blocks((output.get("message") or {}).get("content"))
        if text:
            return text
    text = _blocks(body.get("content"))  # Messages API
    if text:
        return text
    for key in ("completion", "generation", "text", "outputText"):
        value = body.get(key)
        if isinstance(value, str) and value.strip():
            return value
    for key, inner in (("results", "outputText"), ("outputs", "text"), ("generations", "text")):
        items = body.get(key)
        if isinstance(items, list) and items and isinstance(items[0], Mapping):
            value = items[0].get(inner)
            if isinstance(value, str) and value.strip():
                return value
    return None
