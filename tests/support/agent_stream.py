"""The AWS event-stream wire format of Bedrock's InvokeAgent, for loopback agents in tests:
botocore parses these bytes exactly as it parses the service's (Stubber cannot stub an event
stream)."""

from __future__ import annotations

import base64
import json
import struct
import zlib
from typing import Any


def s3_ref(text: str, uri: str) -> dict[str, Any]:
    return {"content": {"text": text}, "location": {"type": "S3", "s3Location": {"uri": uri}}}


def frame(headers: dict[str, str], payload: dict[str, Any]) -> bytes:
    """One message of the AWS event-stream binary protocol (string headers only)."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += bytes([len(raw_name)]) + raw_name + b"\x07"
        encoded += struct.pack(">H", len(raw_value)) + raw_value
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(encoded) + len(body) + 4, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + body
    return message + struct.pack(">I", zlib.crc32(message))


def wire_event(event_type: str, payload: dict[str, Any]) -> bytes:
    headers = {
        ":message-type": "event",
        ":event-type": event_type,
        ":content-type": "application/json",
    }
    return frame(headers, payload)


def wire_exception(kind: str, message: str) -> bytes:
    headers = {
        ":message-type": "exception",
        ":exception-type": kind,
        ":content-type": "application/json",
    }
    return frame(headers, {"message": message})


STREAM_HEADERS = {
    "Content-Type": "application/vnd.amazon.eventstream",
    "x-amz-bedrock-agent-session-id": "session-1",
    "x-amzn-bedrock-agent-content-type": "application/json",
}


def wire_chunk(text: str, uri: str | None = None) -> bytes:
    payload: dict[str, Any] = {"bytes": base64.b64encode(text.encode()).decode()}
    if uri:
        payload["attribution"] = {
            "citations": [{"retrievedReferences": [s3_ref(f"source of {text.strip()}", uri)]}]
        }
    return wire_event("chunk", payload)
