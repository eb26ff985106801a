"""Run folders for the viewer's tests: real demo runs (``evalrunner demo``, a good one and a
degraded one of the same target), a run whose texts are hostile markup, and a generated
large run (the demo's rows repeated under new case ids), all written in the layout Aggregate
writes (``test-reports/<target>/<stamp>-report.json`` / ``-summary.json``) from the report
models themselves."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evalrunner.reports.model import CaseRow, ReportData
from evalrunner.reports.summary import RunSummary

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def demo_runs(out: Path) -> list[Path]:
    """Two demo runs of one target under ``out`` (the second degraded: a regression); the
    summary.json of each, oldest first."""
    for extra in ([], ["--degraded"]):
        subprocess.run(
            [sys.executable, "-m", "evalrunner.cli", "demo", "--out", str(out), *extra],
            check=False,
            capture_output=True,
            timeout=300,
        )
    summaries = sorted(out.glob("test-reports/*/*-summary.json"))
    assert len(summaries) == 2, f"evalrunner demo wrote {summaries}"
    return summaries


def load(summary: Path) -> tuple[RunSummary, ReportData]:
    report = summary.with_name(summary.name.replace("summary.json", "report.json"))
    return (
        RunSummary.model_validate_json(summary.read_bytes()),
        ReportData.model_validate_json(report.read_bytes()),
    )


def write_run(
    out: Path, summary: RunSummary, data: ReportData, *, target: str, stamp: str, run_id: str
) -> Path:
    """``data`` and ``summary`` as a run of ``target`` at ``stamp`` (yymmdd-hhmmss)."""
    folder = out / "test-reports" / target.replace("/", "_")
    folder.mkdir(parents=True, exist_ok=True)
    prefix = f"test-reports/{folder.name}/{stamp}-"
    started = f"20{stamp[:2]}-{stamp[2:4]}-{stamp[4:6]}T{stamp[7:9]}:{stamp[9:11]}:00+00:00"
    data = data.model_copy(
        update={"run_id": run_id, "target": target, "report_prefix": prefix, "started_at": started}
    )
    summary = summary.model_copy(
        update={
            "run_id": run_id,
            "target": target,
            "started_at": started,
            "cases": len({r.case_id for r in data.rows}),
            "items": len(data.rows),
        }
    )
    (folder / f"{stamp}-report.json").write_bytes(ReportData.__pydantic_serializer__.to_json(data))
    (folder / f"{stamp}-summary.json").write_text(summary.model_dump_json(), "utf-8")
    return folder / f"{stamp}-summary.json"


def hostile_run(out: Path, summary: Path) -> Path:
    """A copy of a demo run whose question, answer, context, reason, category and case id
    carry markup and script: the viewer must show them as text."""
    run, data = load(summary)
    first = data.rows[0]
    bad = first.model_copy(
        update={
            "case_id": f"evil{HOSTILE}",
            "question": f"Q {HOSTILE}",
            "answer": f"The answer is {HOSTILE}. Second sentence.",
            "expected_answer": f"E {HOSTILE}",
            "contexts": [f"C {HOSTILE}"],
            "categories": [f"cat{HOSTILE}"],
            "results": [r.model_copy(update={"reason": f"R {HOSTILE}"}) for r in first.results],
        }
    )
    data = data.model_copy(update={"rows": [bad, *data.rows[1:]]})
    return write_run(
        out, run, data, target=f"hostile{HOSTILE}", stamp="240101-000000", run_id="hostile-run"
    )


def big_run(out: Path, summary: Path, cases: int, *, stamp: str = "240102-000000") -> Path:
    """A run of ``cases`` cases made of the demo's rows repeated under new case ids."""
    run, data = load(summary)
    rows: list[CaseRow] = []
    for n in range(cases):
        row = data.rows[n % len(data.rows)]
        rows.append(row.model_copy(update={"case_id": f"case-{n:05d}"}))
    data = data.model_copy(update={"rows": rows, "perturbed_rows": []})
    return write_run(
        out, run, data, target="big-target", stamp=stamp, run_id=f"big-{cases}-{stamp}"
    )


def rich_run(out: Path, summary: Path) -> Path:
    """A copy of a demo run whose first case has what the case page shows beside the answer:
    agent steps, a second iteration, a perturbed variant, and a conversation of two turns."""
    from evalrunner.suite.model import Perturbation
    from evalrunner.targets.steps import AgentStep

    run, data = load(summary)
    first = data.rows[0].model_copy(
        update={
            "steps": [
                AgentStep(name="lookup_policy", arguments={"topic": "leave"}, output="25 days"),
                AgentStep(kind="knowledge_base", name="KB1", failed=True, error="throttled"),
            ]
        }
    )
    again = first.model_copy(update={"iteration": 2, "answer": "Twenty-five days."})
    typo = first.model_copy(
        update={
            "case_id": f"{first.case_id}~typos",
            "question": "How mnay days of anual leave?",
            "perturbation": Perturbation(
                of=first.case_id,
                kind="typos",
                name="typos",
                original_question=first.question,
            ),
        }
    )
    turn = {"conversation_id": "chat-1"}
    chat = [
        data.rows[1].model_copy(update={**turn, "case_id": "chat-1"}),
        data.rows[1].model_copy(update={**turn, "case_id": "chat-1#1", "turn": 1}),
        data.rows[2].model_copy(update={**turn, "case_id": "chat-1#2", "turn": 2}),
    ]
    data = data.model_copy(
        update={"rows": [first, again, *chat, *data.rows[3:]], "perturbed_rows": [typo]}
    )
    return write_run(out, run, data, target="rich", stamp="240103-000000", run_id="rich-run")
