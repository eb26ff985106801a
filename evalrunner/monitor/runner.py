"""A monitor run: read a source, take what is new since the watermark, sample it, and hand
the chosen interactions to the ordinary pipeline as a suite of logged answers (the
``logged`` target: nothing is called), then move the watermark.

The pieces here are shared by the CLI (:mod:`evalrunner.cli.monitoring`, a local run in the
embedded engine) and the deployed handler (``lambdas/monitor.py``, which starts the deployed
state machine): :func:`plan` decides what to score, :func:`suite_rows` writes it as suite
rows, :func:`commit` records it in the watermark.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.monitor.locations import is_s3, split_s3
from evalrunner.monitor.model import Interaction, MonitorError, RecordProblem
from evalrunner.monitor.reading import AUTO, read_location
from evalrunner.monitor.sampling import Sample, choose
from evalrunner.monitor.sources import source_named
from evalrunner.monitor.times import MAX_DURATION_DAYS
from evalrunner.monitor.watermark import (
    LocalWatermarks,
    Watermark,
    WatermarkStore,
    fresh,
    now_utc,
)

if TYPE_CHECKING:
    from evalrunner.privacy import PiiMasker
    from evalrunner.targets.steps import AgentStep

#: Default allowed lateness: how late a record may arrive and still be scored.
DEFAULT_LATENESS_SECONDS = 3600.0
_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


class MonitorOptions(BaseModel):
    """What a monitor run reads and how much of it it scores."""

    model_config = ConfigDict(extra="forbid")

    source: str
    format: str = AUTO
    mapping: dict[str, str] = Field(default_factory=dict)
    #: The monitor's name: its watermark and its reports folder (test-reports/<name>/).
    name: str | None = None
    since: datetime | None = None
    sample: Sample | None = None
    seed: int = 0
    lateness_seconds: float = Field(
        default=DEFAULT_LATENESS_SECONDS, ge=0, le=MAX_DURATION_DAYS * 86400
    )

    def check(self) -> None:
        """Refuse a bad name, format or column mapping before anything is read or locked."""
        self.monitor_name()
        kinds = [self.format] if self.format != AUTO else (["jsonl", "csv"] if self.mapping else [])
        for kind in kinds:
            source_named(kind)(self.mapping)

    def location(self) -> str:
        """The source as the watermark records it: an S3 URI as given, a local path made
        absolute (``./logs`` and ``logs`` are one source)."""
        return self.source if is_s3(self.source) else str(Path(self.source).resolve())

    def monitor_name(self) -> str:
        if self.name:
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", self.name):
                raise MonitorError(
                    f"--name {self.name!r}: use letters, digits, '.', '_' and '-' "
                    "(it names the reports folder)"
                )
            return self.name
        if is_s3(self.source):
            bucket, prefix = split_s3(self.source)
            stem = PurePosixPath(prefix.rstrip("/")).name or bucket
        else:
            stem = Path(self.source).resolve().name or "logs"
        return "monitor-" + (_NAME_CHARS.sub("-", stem).strip("-._") or "logs")[:100]


class Plan(BaseModel):
    """What one monitor run takes: the new interactions, the sample scored, and what was
    passed over and why."""

    model_config = ConfigDict(extra="forbid")

    name: str
    watermark: Watermark
    files: int
    files_skipped: int
    problems: list[RecordProblem]
    found: int
    #: new since the watermark (each decided by this run)
    new: list[Interaction]
    #: the sample of ``new`` that is scored
    chosen: list[Interaction]
    duplicates: int
    too_late: int
    before_since: int
    #: incomplete interactions (traces without their root yet) left for a later run
    waiting: list[Interaction] = Field(default_factory=list)
    #: set when a stopped run left some of ``chosen`` unscored: the oldest one's time, which
    #: the watermark does not move past
    hold: datetime | None = None

    @property
    def pending(self) -> int:
        return len(self.waiting)

    def lines(self) -> list[str]:
        """What the run found, one line each, for the terminal and the Lambda's log."""
        floor = self.watermark.floor()
        mark = (
            f"watermark {self.watermark.event_time.isoformat()} "
            f"(lateness {self.watermark.lateness_seconds:g}s: records from "
            f"{floor.isoformat() if floor else '-'} on are taken)"
            if self.watermark.event_time
            else "no watermark yet: every record is new"
        )
        lines = [
            f"{self.found} interaction(s) read from {self.files} file(s)"
            + (f" ({self.files_skipped} older file(s) passed over)" if self.files_skipped else ""),
            mark,
            f"{len(self.new)} new, {len(self.chosen)} to score, {self.duplicates} already "
            f"taken or duplicated, {self.too_late} too late, {self.before_since} before --since"
            + (
                f", {self.pending} trace(s) pending (root span not read yet: scored when it "
                "comes, or with what came once older than the lateness)"
                if self.pending
                else ""
            ),
        ]
        if self.problems:
            lines.append(f"{len(self.problems)} record(s) could not be read:")
            lines += [f"  {p.text()}" for p in self.problems[:20]]
            if len(self.problems) > 20:
                lines.append(f"  ... and {len(self.problems) - 20} more")
        return lines


def plan(
    options: MonitorOptions,
    store: WatermarkStore,
    *,
    s3: Any = None,
    now: datetime | None = None,
    masker: PiiMasker | None = None,
) -> Plan:
    """Read the source and decide what this run scores; nothing is written. ``now``: the
    run's clock (default: the machine's), which decides what is still pending. ``masker``:
    the run's masking, applied to the problem lines too (they quote records; each is masked
    with the default kinds already, but a run's options may add names)."""
    options.check()
    name = options.monitor_name()
    watermark = store.load(name)
    if watermark is None:
        watermark = fresh(name, options.location(), options.lateness_seconds)
    elif watermark.source != options.location():
        raise MonitorError(
            f"the monitor {name!r} watches {watermark.source}, not {options.location()}; give "
            "this source its own --name"
        )
    else:
        watermark = watermark.model_copy(update={"lateness_seconds": options.lateness_seconds})
    floor = watermark.read_from()
    out_dir = store.out_dir if isinstance(store, LocalWatermarks) else None
    read = read_location(
        options.source,
        options.format,
        options.mapping,
        older_than=floor,
        s3=s3,
        out_dir=out_dir,
        already_taken=watermark.taken,
    )
    selection = watermark.select(read.interactions, options.since, now or now_utc())
    return Plan(
        name=name,
        watermark=watermark,
        files=read.files,
        files_skipped=read.files_skipped,
        problems=[
            p
            if masker is None
            else p.model_copy(
                update={"message": masker.mask(p.message), "file": masker.mask(p.file)}
            )
            for p in [*read.problems, *selection.reused, *selection.unreadable]
        ],
        found=len(read.interactions) + read.already_taken,
        new=selection.new,
        chosen=choose(selection.new, options.sample, options.seed),
        duplicates=selection.duplicates + read.already_taken,
        too_late=selection.too_late,
        before_since=selection.before_since,
        waiting=selection.pending,
    )


def case_id(interaction: Interaction) -> str:
    """A case id for the reports: the interaction's id as a suite id cell can hold it. An id
    that had to be changed (characters replaced, or cut to 120) gets a short hash of the real
    id, so two ids that read alike (``c/1``, ``c:1``) never become one case id: the suite
    would refuse the duplicate and the whole run would be lost. Personal data in the id (a
    user's e-mail as the key) is masked first, whatever ``--no-mask-pii`` says: the case id
    is a label that reaches every report and the notification."""
    from evalrunner.privacy import mask_pii

    cleaned = _NAME_CHARS.sub("-", mask_pii(interaction.id))
    if cleaned == interaction.id and 0 < len(cleaned) <= 120:
        return cleaned
    import hashlib

    digest = hashlib.sha256(interaction.id.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return f"{cleaned[:109].strip('-') or 'interaction'}-{digest}"


def suite_rows(
    interactions: list[Interaction], *, mask_pii: bool | PiiMasker
) -> list[dict[str, Any]]:
    """The interactions as suite rows with their logged answers (and contexts and agent
    steps). ``mask_pii``: every text a metric or a judge reads (question, answer, contexts,
    the steps' arguments and outputs) is masked first, with one placeholder table per
    interaction (:mod:`evalrunner.privacy`), before it is written anywhere; the row's
    ``pii_masked`` cell says what was masked (kinds and counts, never values). A
    :class:`~evalrunner.privacy.PiiMasker` masks with its options (the deployed function's,
    from cdk.json); ``True`` with the defaults. Masked, a text longer than the run's
    evaluators examine (``DEFAULT_MAX_TEXT_CHARS``) keeps that much, and the ``cut`` cell
    says what was cut."""
    from evalrunner.privacy import PiiMasker, Pseudonyms, default_masker

    if isinstance(mask_pii, PiiMasker):
        masker: PiiMasker | None = mask_pii
    else:
        masker = default_masker() if mask_pii else None
    from evalrunner.sanitize import DEFAULT_MAX_TEXT_CHARS

    rows = []
    for item in interactions:
        table = Pseudonyms()
        table.reserve(item.id, item.question, item.answer, item.session or "", *item.contexts)
        table.reserve(*(step.model_dump_json() for step in item.steps))
        cut: list[str] = []

        def clean(
            text: str, where: str = "actual_steps", table: Pseudonyms = table, cut: list[str] = cut
        ) -> str:
            if masker is None:
                return text
            # What the run's evaluators never examine (the pipeline cuts each text there)
            # is neither masked, which costs up to ~100 ms per KB of hostile text, nor
            # stored.
            if len(text) > DEFAULT_MAX_TEXT_CHARS:
                cut.append(
                    f"{where}: {len(text):,} characters, the first {DEFAULT_MAX_TEXT_CHARS:,} kept"
                )
                text = text[:DEFAULT_MAX_TEXT_CHARS]
            return masker.mask(text, table)

        row: dict[str, Any] = {
            "id": case_id(item),
            "question": clean(item.question, "question"),
            "actual_answer": clean(item.answer, "actual_answer"),
            "interaction_id": clean(item.id, "interaction_id"),
            "logged_at": item.timestamp.isoformat(),
            "logged_in": clean(item.origin, "logged_in"),  # a key may name the user
        }
        if item.contexts:
            row["retrieved_contexts"] = [clean(c, "retrieved_contexts") for c in item.contexts]
        if item.steps:
            row["actual_steps"] = [_masked_step(step, clean) for step in item.steps]
        if item.session:
            row["session"] = clean(item.session, "session")
        if table.counts:
            row["pii_masked"] = ", ".join(f"{n} {kind}" for kind, n in table.counts.items())
        if cut:
            row["cut"] = "; ".join(cut)
        rows.append(row)
    return rows


def _masked_step(step: AgentStep, clean: Callable[[str], str]) -> dict[str, Any]:
    """A step as a suite cell holds it, everything but its kind and tool name masked."""
    dumped = step.model_dump(mode="json", exclude_none=True)
    return {k: (v if k in ("kind", "name") else _masked(v, clean)) for k, v in dumped.items()}


def _masked(value: Any, clean: Callable[[str], str]) -> Any:
    """A step's arguments (any JSON) or output, masked: every string, every key (a tool may
    key a map by e-mail) and every integer (a phone or card number logged as a JSON number
    becomes its placeholder). A key called ``name`` or ``kind`` inside the arguments is the
    tool's input like any other (``create_contact(name=...)``)."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, int) and not isinstance(value, bool):
        masked = clean(str(value))
        return value if masked == str(value) else masked
    if isinstance(value, list):
        return [_masked(v, clean) for v in value]
    if isinstance(value, dict):
        return {clean(k) if isinstance(k, str) else k: _masked(v, clean) for k, v in value.items()}
    return value


def as_far_as(plan_: Plan, scored_cases: set[str]) -> Plan:
    """``plan_`` as far as a stopped run got: the interactions it scored (their case ids in
    ``scored_cases``) and those the sample left out are taken; the rest stay new, so the
    next run scores them and none twice."""
    chosen = {i.id for i in plan_.chosen}
    new = [i for i in plan_.new if i.id not in chosen or case_id(i) in scored_cases]
    left = [i.timestamp for i in plan_.chosen if case_id(i) not in scored_cases]
    return plan_.model_copy(update={"new": new, "hold": min(left, default=None)})


def scored_cases(report: Path) -> set[str]:
    """The case ids a run's ``report.json`` holds as answered and scored (``ok``)."""
    import json

    try:
        rows = json.loads(report.read_text("utf-8")).get("rows") or []
    except (OSError, ValueError):
        return set()
    return {str(r.get("case_id")) for r in rows if isinstance(r, dict) and r.get("status") == "ok"}


def commit(plan_: Plan, store: WatermarkStore, run_id: str | None, now: datetime) -> Watermark:
    """Record every new interaction of ``plan_`` (scored or sampled out) and move the
    watermark."""
    moved = plan_.watermark.advanced(plan_.new, run_id, now, plan_.hold, plan_.waiting)
    store.save(moved)
    return moved
