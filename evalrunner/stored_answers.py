"""Re-score a finished run from its stored answers: other metrics, thresholds or judge, and
not one target call.

A finished local run keeps, in ``<out>/test-reports/<target>/<prefix>report.json``, every
case's question, expected answer and the answer, contexts, documents and agent steps the
target gave (the saved records under ``<out>/runs/`` are removed once the reports are
written). :func:`stored_run` turns those rows back into a suite whose cases carry their
answers, so the ordinary pipeline scores them with the ``logged`` target (which calls
nothing): Score, Aggregate and the reports are the ones every run uses, the judge cache is
the usual one, and the original run is the new run's baseline.

What is not rescored, and why: a case the target never answered (nothing to score);
repeated iterations and scripted conversations are refused (a logged answer stands for one
case asked once, so their several answers cannot be kept apart); perturbed copies are left
out (they are the robustness part of the original run, not its cases). The report rows keep
everything the suite gave each case (expected answer, contexts, documents, intent, tool,
data, tools, steps, condition, categories, its extra columns) and what the target reported
besides its answer (contexts, documents, intent, tool, data), so a metric scores the stored
answer against the very expectations of the original run. The agent steps the target
reported (or a monitor read from the logs) go back as the suite's ``actual_steps``, which
the ``logged`` target returns, so the agent metrics score the very steps again. A suite
cannot carry latency or token counts, so metrics over those skip with their usual reason
(the command says so when the original run had latencies)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrunner.errors import ConfigError
from evalrunner.reports.model import CaseRow
from evalrunner.storage import REPORTS_PREFIX

REPORT_SUFFIX = "report.json"


class StoredRun(BaseModel):
    """A finished run as rescore reads it: who answered, and the answered cases as suite rows
    (each with its logged answer)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    target: str
    report: Path
    #: The reports folder that holds the run (``<home>/test-reports/<target>/``): where its
    #: rescore writes by default, so the original is found as the new run's baseline.
    home: Path
    #: One suite row per answered case (``id``, ``question``, ``actual_answer``, ...).
    rows: list[dict[str, Any]]
    #: ``case-id (status)`` of each case left out because the target gave no answer.
    unanswered: list[str]
    #: What the stored answers lack that the original run had, one sentence each.
    notes: list[str]


def find_report(run: str | Path, out: Path) -> Path:
    """The ``report.json`` of ``run``: a run id looked up under ``out``, a report file
    (``…-report.json`` or ``…-summary.json``), or a target's report folder (its newest run)."""
    path = Path(run)
    if path.is_file():
        name = path.name
        for suffix in ("summary.json", "details.csv", "report.html", "details.xlsx"):
            if name.endswith(suffix):
                name = name[: -len(suffix)] + REPORT_SUFFIX
        found = path.with_name(name)
        if found.is_file() and found.name.endswith(REPORT_SUFFIX):
            return found
        raise ConfigError(
            f"RUN {run}: not a run's report file; give a run id, its ...-report.json, or "
            "its report folder (test-reports/<target>)"
        )
    if path.is_dir():
        reports = sorted(path.glob(f"*-{REPORT_SUFFIX}"))
        if not reports:
            raise ConfigError(
                f"RUN {run}: the folder holds no run's report.json; give a run id or a "
                "report folder (test-reports/<target>)"
            )
        return reports[-1]  # names start with the run's time: the newest is last
    run_id = str(run)
    root = out / REPORTS_PREFIX
    # the report's name begins with the run id's date and time (yymmdd-hhmmss-)
    for candidate in sorted(root.glob(f"*/{run_id[:14]}*{REPORT_SUFFIX}")):
        if _run_id_of(candidate) == run_id:
            return candidate
    raise ConfigError(
        f"RUN {run_id!r}: no finished run with that id under {root} (nor a file or folder of "
        "that name); give the run id from its summary, or its report folder (a project "
        "file's cell keeps its runs in <output>/<target>/<suite>/test-reports/<target>)"
    )


def _run_id_of(path: Path) -> str | None:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
    value = data.get("run_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def stored_run(run: str | Path, out: Path) -> StoredRun:
    """Read ``run``'s stored answers back as suite rows; a :class:`ConfigError` that says
    what is wrong when it cannot be rescored."""
    report = find_report(run, out)
    try:
        data = json.loads(report.read_text("utf-8"))
        run_id = data["run_id"]
        target = data["target"]
        rows = [CaseRow.model_validate(r) for r in data["rows"]]
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
        raise ConfigError(
            f"RUN {run}: {report} is not a readable run report ({type(exc).__name__}); "
            "rescore reads the report.json a finished run writes"
        ) from None
    if any(r.conversation_id is not None for r in rows):
        raise ConfigError(
            f"RUN {run_id}: the run holds scripted conversations, which cannot be rescored "
            "(a conversation's turns cannot carry logged answers); run the suite again instead"
        )
    if any(r.iteration > 1 for r in rows):
        raise ConfigError(
            f"RUN {run_id}: the run asked each case more than once (iterations), which "
            "cannot be rescored: a logged answer stands for one case asked once; run the "
            "suite again instead"
        )
    answered = [r for r in rows if r.status == "ok" and r.answer is not None]
    unanswered = [f"{r.case_id} ({r.status})" for r in rows if r not in answered]
    if not answered:
        raise ConfigError(
            f"RUN {run_id}: no stored answers to rescore ({len(rows)} case(s), none answered "
            "by the target)"
        )
    notes = []
    if any(r.latency_ms is not None for r in answered):
        notes.append(
            "latency and token counts stay in the original run's reports (stored answers "
            "carry none)"
        )
    folder = report.parent.parent
    return StoredRun(
        run_id=run_id,
        target=target,
        report=report,
        home=folder.parent if folder.name == REPORTS_PREFIX.strip("/") else out,
        rows=[_suite_row(r) for r in answered],
        unanswered=unanswered,
        notes=notes,
    )


def _suite_row(row: CaseRow) -> dict[str, Any]:
    """A suite row whose logged answer is what the target said, as the report stored it."""
    suite_row: dict[str, Any] = {
        "id": row.case_id,
        "question": row.question,
        "actual_answer": row.answer,
    }
    optional: dict[str, Any] = {
        "expected_answer": row.expected_answer,
        "expected_contexts": row.expected_contexts or None,
        "expected_documents": row.expected_documents or None,
        "expected_intent": row.expected_intent,
        "expected_tool": row.expected_tool,
        "expected_data": row.expected_data,
        "condition": row.condition,
        "retrieved_contexts": row.contexts or None,
        "retrieved_documents": row.documents or None,
        "actual_intent": row.intent,
        "actual_tool": row.tool,
        "retrieved_data": row.data,
        "actual_steps": (
            [s.model_dump(mode="json", exclude_none=True) for s in row.steps] if row.steps else None
        ),
        "categories": row.categories or None,
        "expected_tools": row.expected_tools,
        "expected_steps": (
            [s.model_dump(mode="json", exclude_none=True) for s in row.expected_steps]
            if row.expected_steps
            else None
        ),
    }
    suite_row.update({k: v for k, v in optional.items() if v is not None})
    # the suite's extra columns, as columns again (none of them is a known header)
    suite_row.update({k: v for k, v in row.metadata.items() if k not in suite_row})
    return suite_row
