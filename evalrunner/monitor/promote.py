"""``evalrunner promote RUN --worst N --to suite.xlsx|.jsonl``: a run's worst interactions as
regression cases.

Only failing cases (a primary metric below its threshold) are promoted by default: a case
that passed is no regression to pin, so ``--worst 10`` over a run where three failed writes
those three and says so; ``--include-passing`` fills the rest with the passing cases closest
to a threshold. Worst first: the most primary metrics failed, then the furthest below a
threshold (each scored primary metric's margin, ``score - threshold`` or ``threshold -
score`` for a metric where lower is better; the case's smallest margin counts). Each case
keeps its question; the answer production gave is written as a **candidate** expected
answer in its own column (``candidate_expected_answer``) with ``review`` saying it needs
one, never as
``expected_answer``: the worst answers are the likeliest to be wrong, and a suite must not
pin them as right until someone has read them. ``evalrunner run`` reads the file as it is
(the two columns are kept as the case's metadata); a reviewer moves a corrected answer into
``expected_answer``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrunner.errors import ConfigError
from evalrunner.monitor.model import MonitorError
from evalrunner.reports.model import CaseRow, MetricInfo
from evalrunner.reports.writers.formulas import neutralise
from evalrunner.stored_answers import find_report

REVIEW = "candidate: the production answer, not checked; correct it and move it to expected_answer"
COLUMNS = (
    "id",
    "question",
    "expected_answer",
    "candidate_expected_answer",
    "review",
    "failed_metrics",
    "worst_metric",
    "worst_score",
    "promoted_from",
)


class Promoted(BaseModel):
    """One promoted case, as a suite row."""

    model_config = ConfigDict(extra="forbid")

    id: str
    question: str
    expected_answer: str | None = None
    candidate_expected_answer: str
    review: str = REVIEW
    failed_metrics: str
    worst_metric: str | None
    worst_score: float | None
    promoted_from: str


class Promotion(BaseModel):
    """What ``promote`` chose: the cases, worst first, and how many the run had to choose
    from (so the output can say when fewer failed than were asked for)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    cases: list[Promoted]
    #: answered cases with a scored primary metric
    scored: int
    #: of those, the ones with a primary metric failed
    failing: int


def worst_cases(
    run: str | Path, out: Path, worst: int, *, include_passing: bool = False
) -> Promotion:
    """The ``worst`` failing answered cases of ``run`` (a run id under ``out``, its report
    file or folder), worst first; ``include_passing``: passing cases fill the rest, those
    closest to a threshold first."""
    if worst < 1:
        raise MonitorError("--worst: give how many cases to promote (at least 1)")
    try:
        report = find_report(run, out)
        data = json.loads(report.read_text("utf-8"))
        run_id = str(data["run_id"])
        infos = [MetricInfo.model_validate(m) for m in data["metrics"]]
        rows = [CaseRow.model_validate(r) for r in data["rows"]]
    except ConfigError:
        raise
    except (OSError, ValueError, KeyError, TypeError, ValidationError) as exc:
        raise MonitorError(
            f"RUN {run}: not a readable run report ({type(exc).__name__}); promote reads the "
            "report.json a finished run writes"
        ) from None
    primary = {m.metric: m for m in infos if m.primary}
    ranked = []
    for row in rows:
        if row.status != "ok" or row.answer is None or row.conversation_id is not None:
            continue
        failed: list[str] = []
        worst_margin: float | None = None
        worst_metric: str | None = None
        worst_score: float | None = None
        for result in row.results:
            info = primary.get(result.metric)
            if info is None or result.score is None:
                continue
            if result.success is False:
                failed.append(result.metric)
            threshold = result.threshold if result.threshold is not None else info.threshold
            margin = result.score - threshold if info.higher_is_better else threshold - result.score
            if worst_margin is None or margin < worst_margin:
                worst_margin, worst_metric, worst_score = margin, result.metric, result.score
        if worst_margin is None:
            continue  # nothing scored: nothing says it is bad
        ranked.append(
            (-len(failed), worst_margin, row.case_id, row, failed, worst_metric, worst_score)
        )
    ranked.sort(key=lambda item: (item[0], item[1], item[2]))
    failing = sum(1 for item in ranked if item[0] < 0)
    taken = ranked if include_passing else [item for item in ranked if item[0] < 0]
    cases = [
        Promoted(
            id=f"promoted-{row.case_id}",
            question=row.question,
            candidate_expected_answer=row.answer or "",
            failed_metrics=", ".join(failed),
            worst_metric=metric,
            worst_score=score,
            promoted_from=f"run {run_id}, case {row.case_id}",
        )
        for _, _, _, row, failed, metric, score in taken[:worst]
    ]
    return Promotion(run_id=run_id, cases=cases, scored=len(ranked), failing=failing)


def write_suite(cases: list[Promoted], path: Path) -> None:
    """Write the cases as an .xlsx workbook (formula-like text neutralised) or JSON Lines."""
    suffix = path.suffix.lower()
    if suffix not in (".xlsx", ".jsonl"):
        raise MonitorError(f"--to {path}: write an .xlsx or a .jsonl suite")
    if not cases:
        raise MonitorError("nothing to promote: the run has no answered, scored case")
    rows = [c.model_dump(mode="json") for c in cases]
    path.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".jsonl":
        body = "".join(json.dumps(_present(r), ensure_ascii=False) + "\n" for r in rows)
        path.write_text(body, "utf-8")
        return
    import xlsxwriter

    workbook = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False})
    try:
        sheet = workbook.add_worksheet("promoted")
        wrap = workbook.add_format({"text_wrap": True, "valign": "top"})
        for col, name in enumerate(COLUMNS):
            sheet.write_string(0, col, name)
        for number, row in enumerate(rows, start=1):
            for col, name in enumerate(COLUMNS):
                value = row.get(name)
                if isinstance(value, float):
                    sheet.write_number(number, col, value)
                elif value is not None:
                    sheet.write_string(number, col, neutralise(str(value)), wrap)
        sheet.set_column(1, 3, 60)
    finally:
        workbook.close()


def _present(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in row.items() if v is not None}
