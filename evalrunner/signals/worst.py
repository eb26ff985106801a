"""The worst interactions of a finished run, for the notification an operator reads first:
which answers failed the most primary metrics, by the most. The texts are masked for PII
(:mod:`evalrunner.privacy`), redacted of registered secrets and cut, because an SNS message
lands in inboxes and chat channels that are no place for users' data or whole answers."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrunner.errors import EvalRunnerError
from evalrunner.privacy import PiiMasker, mask_case
from evalrunner.redaction import redact
from evalrunner.reports.model import CaseRow
from evalrunner.reports.summary import MetricSummary, RunSummary
from evalrunner.storage import RunStore


class FailedMetric(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    score: float | None
    threshold: float
    higher_is_better: bool

    def text(self) -> str:
        score = "no score" if self.score is None else f"{self.score:.2f}"
        sign = ">=" if self.higher_is_better else "<="
        return f"{self.metric} {score} (needs {sign} {self.threshold:g})"


class WorstInteraction(BaseModel):
    """One interaction as the notification shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    case_id: str
    question: str
    answer: str
    failed: list[FailedMetric]
    #: How far past its threshold its worst failed metric fell (negative; the second key
    #: of the order, after the number of metrics failed).
    margin: float


def worst_rows(
    rows: list[CaseRow],
    metrics: list[MetricSummary],
    count: int,
    *,
    text_chars: int = 300,
    masker: PiiMasker | None = None,
) -> list[WorstInteraction]:
    """The ``count`` answered rows that failed the most primary metrics, then furthest
    below a threshold (the order ``evalrunner promote --worst`` uses, so the message and a
    promotion name the same interactions), masked and cut to ``text_chars``. Rows that failed
    nothing are never listed: a healthy run's message lists none."""
    primary = {m.metric: m for m in metrics if m.primary}
    ranked: list[tuple[int, float, str, CaseRow, list[FailedMetric]]] = []
    for row in rows:
        if row.status != "ok" or row.answer is None or row.perturbation is not None:
            continue
        failed = []
        worst_margin = 0.0
        for result in row.results:
            info = primary.get(result.metric)
            if info is None or result.success is not False:
                continue
            threshold = result.threshold if result.threshold is not None else info.threshold
            failed.append(
                FailedMetric(
                    metric=result.metric,
                    score=result.score,
                    threshold=threshold,
                    higher_is_better=info.higher_is_better,
                )
            )
            if result.score is not None:
                margin = result.score - threshold
                worst_margin = min(worst_margin, margin if info.higher_is_better else -margin)
        if failed:
            ranked.append((-len(failed), worst_margin, row.case_id, row, failed))
    ranked.sort(key=lambda item: item[:3])
    chosen = []
    for _, margin, _, row, failed in ranked[:count]:
        # Secrets first (a registered value is replaced whole before masking can split it),
        # then PII, then the cut (a placeholder is never half cut away with its value).
        masked = mask_case(redact(row.question), redact(row.answer or ""), masker=masker)
        chosen.append(
            WorstInteraction(
                case_id=_cut(redact(row.case_id), 120),
                question=_cut(masked.question, text_chars),
                answer=_cut(masked.answer or "", text_chars),
                failed=failed,
                margin=round(margin, 6),
            )
        )
    return chosen


def read_worst(
    store: RunStore, summary: RunSummary, count: int, *, text_chars: int = 300
) -> list[WorstInteraction]:
    """The worst interactions of ``summary``'s run, read from its report.json (the rows
    Aggregate has just written). A report that cannot be read gives none: the message
    still goes out, without the list."""
    if count <= 0:
        return []
    try:
        data: Any = json.loads(store.get_bytes(summary.reports.report))
        rows = [CaseRow.model_validate(r) for r in data["rows"]]
    except (EvalRunnerError, ValueError, KeyError, TypeError, ValidationError):
        return []
    return worst_rows(rows, summary.metrics, count, text_chars=text_chars)


def worst_lines(worst: list[WorstInteraction], text_chars: int) -> list[str]:
    """The notification's section (empty when nothing failed)."""
    if not worst:
        return []
    lines = [f"Worst interactions (PII masked, texts cut to {text_chars} characters):"]
    for n, item in enumerate(worst, 1):
        lines.append(f"{n}. {item.case_id}: " + "; ".join(f.text() for f in item.failed))
        lines.append(f"   Q: {_one_line(item.question)}")
        lines.append(f"   A: {_one_line(item.answer)}")
    return lines


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _one_line(text: str) -> str:
    return " ".join(text.split())
