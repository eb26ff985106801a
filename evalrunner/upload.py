"""Start a run from a suite dropped into the runner bucket (the S3 upload trigger).

A suite uploaded under ``test-suites/`` (``.xlsx``, ``.xlsm``, ``.csv``, ``.json``) becomes an
event. The fields come, first match wins, from:

1. a sidecar ``<name>.run.json`` next to the suite (``test-suites/hr.run.json`` for
   ``test-suites/hr.xlsx``): a partial event, any field but ``key``; upload it *before* the
   suite, since the suite's upload is what starts the run;
2. the object's tags ``evalrunner-target`` (a target object as JSON, or, because S3 tag values
   allow few characters, a Lambda / state machine / agent alias ARN or an https URL) and
   ``evalrunner-iterations``;
3. the deployment's defaults (``upload_defaults`` in ``cdk.json``).

The event and the suite are validated exactly as Prepare would (``parse_event``,
``read_suite``, ``settle``) before anything starts; an upload that cannot run gets
``test-reports/_rejected/<name>.json`` with every reason and what to do about it.

This module knows nothing of Lambda: the handler in ``lambdas/start_from_upload.py`` parses
the EventBridge event and calls :func:`start_from_upload`.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal
from urllib.parse import unquote_plus

from botocore.exceptions import ClientError

from evalrunner.errors import ConfigError, EvalRunnerError, EventError, ObjectMissing
from evalrunner.event import SUITE_EXTENSIONS, SUITE_PREFIX, parse_event
from evalrunner.event_rules import MONITOR_SUITE_PREFIX, WORKFLOW_SUITE_PREFIX
from evalrunner.pipeline.prepare import settle
from evalrunner.storage import REPORTS_PREFIX, RunStore
from evalrunner.suite.readers import read_suite

SIDECAR_SUFFIX = ".run.json"
TARGET_TAG = "evalrunner-target"
ITERATIONS_TAG = "evalrunner-iterations"
REJECTED_PREFIX = f"{REPORTS_PREFIX}_rejected/"

#: Environment variables the upload function is configured with (see infra/parts/functions.py).
ENV_DEFAULT_TARGET = "EVALRUNNER_DEFAULT_TARGET"
ENV_DEFAULT_ITERATIONS = "EVALRUNNER_DEFAULT_ITERATIONS"

Status = Literal["started", "rejected", "ignored", "duplicate"]

_AGENT_ALIAS_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:bedrock:[a-z0-9-]+:\d{12}:agent-alias/(?P<agent>[A-Z0-9]+)/(?P<alias>[A-Z0-9]+)$"
)


@dataclass(frozen=True)
class UploadDefaults:
    """What an upload runs with when neither its sidecar nor its tags say."""

    target: dict[str, Any] | None = None
    iterations: int | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> UploadDefaults:
        env = os.environ if environ is None else environ
        target: dict[str, Any] | None = None
        raw_target = env.get(ENV_DEFAULT_TARGET, "").strip()
        if raw_target:
            try:
                target = json.loads(raw_target)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{ENV_DEFAULT_TARGET} is not valid JSON ({exc})") from exc
            if not isinstance(target, dict):
                raise ConfigError(f"{ENV_DEFAULT_TARGET} must be a JSON object")
        iterations: int | None = None
        raw_iterations = env.get(ENV_DEFAULT_ITERATIONS, "").strip()
        if raw_iterations:
            try:
                iterations = int(raw_iterations)
            except ValueError as exc:
                raise ConfigError(f"{ENV_DEFAULT_ITERATIONS} must be a whole number") from exc
        return cls(target=target, iterations=iterations)


@dataclass
class UploadOutcome:
    """What became of one upload; also the upload function's return value."""

    status: Status
    key: str
    event: dict[str, Any] | None = None
    execution_arn: str | None = None
    rejection_key: str | None = None
    reasons: list[str] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class UploadRejected(EvalRunnerError):
    """An uploaded suite that cannot run; ``reasons`` lists every problem found."""

    code = "UploadRejected"

    def __init__(
        self,
        reasons: list[str],
        *,
        event: dict[str, Any] | None = None,
        sources: dict[str, str] | None = None,
    ) -> None:
        self.reasons = list(reasons)
        self.event = event
        self.sources = dict(sources or {})
        super().__init__("; ".join(self.reasons))


# ------------------------------------------------------------------------------ keys


def is_sidecar(key: str) -> bool:
    return key.lower().endswith(SIDECAR_SUFFIX)


def is_suite_upload(key: str) -> bool:
    """A suite under ``test-suites/`` (not a sidecar): the uploads that start a run."""
    return (
        key.startswith(SUITE_PREFIX)
        and not key.startswith((MONITOR_SUITE_PREFIX, WORKFLOW_SUITE_PREFIX))
        and key.lower().endswith(SUITE_EXTENSIONS)
        and not is_sidecar(key)
        and not key.endswith("/")
    )


def sidecar_key(key: str) -> str:
    """``test-suites/team/hr.xlsx`` -> ``test-suites/team/hr.run.json``."""
    stem, _ = posixpath.splitext(key)
    return stem + SIDECAR_SUFFIX


def rejection_key(key: str) -> str:
    """``test-suites/team/hr.xlsx`` -> ``test-reports/_rejected/team/hr.xlsx.json``."""
    name = key[len(SUITE_PREFIX) :] if key.startswith(SUITE_PREFIX) else posixpath.basename(key)
    return f"{REJECTED_PREFIX}{name}.json"


def execution_name(key: str, token: str | None = None) -> str:
    """A valid, unique execution name (at most 80 characters). The same ``token`` (the
    EventBridge event id) gives the same name, so a redelivered event starts nothing new."""
    stem = posixpath.splitext(posixpath.basename(key))[0]
    stem = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-")[:40] or "suite"
    token = re.sub(r"[^A-Za-z0-9_-]+", "-", token or "")[:39] or (
        f"{datetime.now(UTC):%y%m%d-%H%M%S}-{secrets.token_hex(3)}"
    )
    return f"{stem}-{token}"[:80]


def parse_target_tag(value: str) -> dict[str, Any]:
    """The ``evalrunner-target`` tag: a JSON target object, or the short forms that fit S3's
    tag characters (letters, digits, spaces and ``+ - = . _ : / @``)."""
    text = value.strip()
    if text.startswith("{"):
        try:
            target = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EventError(f"tag {TARGET_TAG}: not valid JSON ({exc})") from exc
        if not isinstance(target, dict):
            raise EventError(f"tag {TARGET_TAG}: must be a JSON object")
        return target
    if text.startswith("arn:") and ":lambda:" in text:
        return {"lambdaArn": text}
    if text.startswith("arn:") and ":states:" in text:
        return {"stepFunctionArn": text}
    match = _AGENT_ALIAS_ARN.match(text)
    if match:
        return {"agentId": match["agent"], "agentAliasId": match["alias"]}
    if text.startswith(("https://", "http://")):
        return {"url": text}
    raise EventError(
        f"tag {TARGET_TAG}: {text!r} is neither a JSON target object nor a Lambda, state "
        "machine or agent-alias ARN or an http(s) URL"
    )


# ------------------------------------------------------------------------------ S3 reads


def resolve_key(store: RunStore, raw_key: str) -> str | None:
    """The object's key as it exists: S3 notifications may URL-encode keys (``a+b.xlsx`` for
    ``a b.xlsx``). None when the object is gone (deleted before the trigger ran)."""
    candidates = [raw_key]
    decoded = unquote_plus(raw_key)
    if decoded != raw_key:
        candidates.append(decoded)
    for key in candidates:
        try:
            store.s3.head_object(Bucket=store.bucket, Key=key)
            return key
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchKey", "NotFound"):
                raise
    return None


def object_tags(store: RunStore, key: str) -> dict[str, str]:
    response = store.s3.get_object_tagging(Bucket=store.bucket, Key=key)
    return {t["Key"]: t["Value"] for t in response.get("TagSet", [])}


def read_sidecar(store: RunStore, key: str) -> dict[str, Any] | None:
    """The sidecar's partial event; None when there is none. Raises EventError if bad."""
    side = sidecar_key(key)
    try:
        data = store.get_bytes(side)
    except ObjectMissing:  # a sidecar the role may not read is an error, not "no sidecar"
        return None
    try:
        value = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise EventError(f"sidecar {side}: not valid JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise EventError(f"sidecar {side}: must be a JSON object (a partial event)")
    if "key" in value and value["key"] != key:
        raise EventError(
            f"sidecar {side}: 'key' is {value['key']!r} but the sidecar belongs to {key!r}; "
            "leave 'key' out, the uploaded suite's key is used"
        )
    return value


# ------------------------------------------------------------------------------ the event


def build_event(
    store: RunStore, key: str, defaults: UploadDefaults
) -> tuple[dict[str, Any], dict[str, str]]:
    """The raw event for an uploaded suite and where its target and iterations came from.
    Raises :class:`UploadRejected` with every reason when it cannot be built."""
    reasons: list[str] = []
    failed: set[str] = set()  # fields whose source was present but bad
    try:
        sidecar = read_sidecar(store, key) or {}
    except EventError as exc:
        reasons.extend(exc.problems)
        failed.update(("target", "iterations"))
        sidecar = {}
    tags = object_tags(store, key)
    event: dict[str, Any] = {**sidecar, "key": key}
    sources: dict[str, str] = {}

    if "target" in sidecar:
        sources["target"] = "sidecar"
    elif TARGET_TAG in tags:
        try:
            event["target"] = parse_target_tag(tags[TARGET_TAG])
            sources["target"] = "tag"
        except EventError as exc:
            reasons.extend(exc.problems)
            failed.add("target")
    elif defaults.target is not None:
        event["target"] = defaults.target
        sources["target"] = "default"

    if "iterations" in sidecar:
        sources["iterations"] = "sidecar"
    elif ITERATIONS_TAG in tags:
        raw = tags[ITERATIONS_TAG].strip()
        if raw.isdigit():
            event["iterations"] = int(raw)
            sources["iterations"] = "tag"
        else:
            reasons.append(f"tag {ITERATIONS_TAG}: {raw!r} is not a whole number")
            failed.add("iterations")
    elif defaults.iterations is not None:
        event["iterations"] = defaults.iterations
        sources["iterations"] = "default"

    for name, tag in (("target", TARGET_TAG), ("iterations", ITERATIONS_TAG)):
        if name not in event and name not in failed:
            reasons.append(
                f"{name}: not given; put it in the sidecar {sidecar_key(key)} (uploaded before "
                f"the suite), tag the suite {tag}, or configure upload_defaults in cdk.json"
            )
    if reasons:
        raise UploadRejected(reasons, event=event, sources=sources)
    return event, sources


def check_upload(store: RunStore, key: str, event: dict[str, Any]) -> None:
    """Validate the event and the suite as Prepare will; every problem in one rejection."""
    reasons: list[str] = []
    parsed = None
    try:
        parsed = parse_event(event)
    except EventError as exc:
        reasons.extend(exc.problems)
    try:
        suite = read_suite(store.get_bytes(key), posixpath.basename(key))
        if parsed is not None:
            settle(parsed, suite)
    except EvalRunnerError as exc:
        reasons.append(exc.message)
    if reasons:
        raise UploadRejected(reasons, event=event)


def start_from_upload(
    store: RunStore,
    sfn: Any,
    state_machine_arn: str,
    raw_key: str,
    defaults: UploadDefaults,
    *,
    token: str | None = None,
    now: datetime | None = None,
) -> UploadOutcome:
    """Build, validate and start the run for an uploaded suite, or write why it cannot run.

    ``sfn`` is a boto3 Step Functions client; ``token`` makes the execution name idempotent.
    """
    if not is_suite_upload(unquote_plus(raw_key)) and not is_suite_upload(raw_key):
        return UploadOutcome("ignored", raw_key, reasons=["not a suite under test-suites/"])
    key = resolve_key(store, raw_key)
    if key is None:
        return UploadOutcome("ignored", raw_key, reasons=["the object no longer exists"])
    sources: dict[str, str] = {}
    try:
        event, sources = build_event(store, key, defaults)
        check_upload(store, key, event)
    except UploadRejected as exc:
        return reject(store, key, exc.reasons, exc.event, exc.sources or sources, now=now)

    try:
        arn = sfn.start_execution(
            stateMachineArn=state_machine_arn,
            name=execution_name(key, token),
            input=json.dumps(event),
        )["executionArn"]
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
            return UploadOutcome("duplicate", key, event=event, sources=sources)
        raise
    try:  # a rejection from an earlier upload of the same key no longer applies
        store.s3.delete_object(Bucket=store.bucket, Key=rejection_key(key))
    except ClientError:
        pass
    return UploadOutcome("started", key, event=event, execution_arn=arn, sources=sources)


def reject(
    store: RunStore,
    key: str,
    reasons: list[str],
    event: dict[str, Any] | None,
    sources: dict[str, str],
    *,
    now: datetime | None = None,
) -> UploadOutcome:
    """Write ``test-reports/_rejected/<name>.json`` and return the rejected outcome."""
    where = rejection_key(key)
    store.put_json(
        where,
        {
            "key": key,
            "bucket": store.bucket,
            "rejected_at": (now or datetime.now(UTC)).isoformat(timespec="seconds"),
            "reasons": reasons,
            "event": event,
            "sources": sources,
            "fix": (
                f"Fix the problems above, then upload {key} again. Target and iterations come "
                f"from the sidecar {sidecar_key(key)} (upload it first), else the tags "
                f"{TARGET_TAG} / {ITERATIONS_TAG}, else the deployment's upload_defaults. "
                "Check an event locally with 'evalrunner validate EVENT.json'."
            ),
        },
    )
    return UploadOutcome(
        "rejected", key, event=event, rejection_key=where, reasons=reasons, sources=sources
    )


__all__ = [
    "UploadDefaults",
    "UploadOutcome",
    "UploadRejected",
    "build_event",
    "check_upload",
    "execution_name",
    "is_suite_upload",
    "parse_target_tag",
    "rejection_key",
    "sidecar_key",
    "start_from_upload",
]
