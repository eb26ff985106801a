"""The workflow folder's ``workflow.json``: each step's status, the digest of what it read,
and what it wrote. A step whose record says done, whose inputs digest is unchanged and whose
outputs are still there is not run again, so a stopped workflow resumes at its first
unfinished step.

The manifest is rewritten after every step (to a temporary file, then renamed), so a
workflow killed mid-step loses only that step."""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from evalrunner.errors import ConfigError
from evalrunner.workflow.config import STEPS, Step

MANIFEST = "workflow.json"
Status = Literal["pending", "done", "skipped", "failed"]


class StepRecord(BaseModel):
    """One step: where it stands, what it read (by digest) and what it wrote."""

    model_config = ConfigDict(extra="forbid")

    step: Step
    status: Status = "pending"
    #: The step's verdict: a run's outcome (passed, failed, ...), or the step's own.
    verdict: str | None = None
    #: One line for the report: what the step found.
    headline: str | None = None
    #: SHA-256 of the step's settings and of the outputs of the steps it read.
    inputs_digest: str | None = None
    #: What it wrote, by name: paths relative to the workflow folder.
    outputs: dict[str, str] = Field(default_factory=dict)
    #: SHA-256 of each output file, so a later step's inputs digest changes with it.
    output_digests: dict[str, str] = Field(default_factory=dict)
    #: Step-specific numbers the report shows (counts, rates).
    facts: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None

    @field_validator("outputs")
    @classmethod
    def _inside(cls, outputs: dict[str, str]) -> dict[str, str]:
        # the manifest is read back from a folder or a bucket someone else can write to: an
        # output must name a file inside the workflow folder, never an absolute path, a
        # climb out (`..`) into another workflow or the machine (the next step would read it
        # and upload it as its suite), nor a URL the report would link (`javascript:`)
        for name, rel in outputs.items():
            if (
                not rel
                or rel.startswith("/")
                or "\\" in rel
                or ":" in rel
                or posixpath.normpath(rel) != rel
                or ".." in rel.split("/")
            ):
                raise ValueError(
                    f"output {name!r}: {rel[:200]!r} is not a path inside the workflow folder"
                )
        return outputs


class Manifest(BaseModel):
    """Every step's record, in run order."""

    model_config = ConfigDict(extra="forbid")

    version: Literal[1] = 1
    steps: list[StepRecord] = Field(default_factory=lambda: [StepRecord(step=s) for s in STEPS])

    @model_validator(mode="after")
    def _every_step_once(self) -> Manifest:
        # a manifest edited by hand (a step removed or repeated) is refused here, by name,
        # rather than failing later on a step it does not hold
        have = [r.step for r in self.steps]
        if have != list(STEPS):
            missing = [s.value for s in STEPS if s not in have]
            raise ValueError(
                "its steps must be each workflow step once, in order"
                + (f"; missing: {', '.join(missing)}" if missing else "")
            )
        return self

    def record(self, step: Step) -> StepRecord:
        return next(r for r in self.steps if r.step == step)

    def replace(self, new: StepRecord) -> None:
        self.steps = [new if r.step == new.step else r for r in self.steps]


def verdict(manifest: Manifest) -> str:
    """``passed`` when every step that ran passed; ``failed`` when one found a failure;
    ``incomplete`` when a step failed to run (steps not selected are not counted)."""
    if any(r.status == "failed" for r in manifest.steps):
        return "incomplete"
    verdicts = [r.verdict for r in manifest.steps if r.status == "done" and r.verdict]
    return "passed" if all(v == "passed" for v in verdicts) else "failed"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def digest_json(value: Any) -> str:
    """SHA-256 of ``value`` as canonical JSON."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def digest_tree(path: Path) -> str:
    """SHA-256 of a folder's files (names and contents, sorted), or of one file."""
    if path.is_file():
        return digest_file(path)
    h = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        h.update(str(file.relative_to(path)).encode("utf-8") + b"\0")
        h.update(digest_file(file).encode("ascii"))
    return h.hexdigest()


def load(folder: Path, *, where: str | None = None, fix: str | None = None) -> Manifest:
    """The folder's manifest, or a fresh one. ``where`` and ``fix``: what a refusal names
    (default: the file, and another --out folder)."""
    path = folder / MANIFEST
    if not path.is_file():
        return Manifest()
    try:
        return Manifest.model_validate_json(path.read_bytes())
    except ValidationError as exc:
        first = exc.errors()[0]
        at = ".".join(str(part) for part in first["loc"])
        reason = str(first["msg"]).removeprefix("Value error, ")
        raise ConfigError(
            f"{where or path}: not a workflow manifest ({at + ': ' if at else ''}{reason}); "
            + (fix or "give another --out folder, or delete the file to start the workflow again")
        ) from None


def save(folder: Path, manifest: Manifest) -> None:
    """Write the manifest atomically (a reader never sees half of it)."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".workflow-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(manifest.model_dump_json(indent=2) + "\n")
    os.replace(tmp, folder / MANIFEST)


def finished(record: StepRecord, digest: str, folder: Path) -> bool:
    """A step that need not run again: done or skipped with the same inputs, and its outputs
    there and as it wrote them."""
    # each output is checked against the digest recorded when it was written: one edited or
    # truncated by hand is not reused (nor, through their inputs digest, are its readers)
    return (
        record.status in ("done", "skipped")
        and record.inputs_digest == digest
        and all((folder / p).exists() for p in record.outputs.values())
        and all(
            digest_tree(folder / record.outputs[name]) == recorded
            for name, recorded in record.output_digests.items()
            if name in record.outputs
        )
    )
