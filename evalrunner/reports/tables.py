"""Turn case records into the rows of details.csv and result.csv, and the run summary."""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalrunner.evaluators import Evaluator, MetricResult
from evalrunner.run import CaseRecord, ManifestItem

DETAIL_COLUMNS = [
    "case_id",
    "iteration",
    "categories",
    "question",
    "expected_answer",
    "answer",
    "contexts",
    "documents",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "status",
    "error",
]

RESULT_COLUMNS = [
    "Metric",
    "Evaluator",
    "Primary",
    "Average Score",
    "Pass rate",
    "Count",
    "Min",
    "Max",
    "Std",
    "Threshold",
    "Higher is better",
    "Skipped",
    "Errored",
]


@dataclass(frozen=True)
class MetricColumn:
    evaluator: str
    metric: str
    primary: bool
    threshold: float
    higher_is_better: bool


def metric_columns(evaluators: Sequence[Evaluator]) -> list[MetricColumn]:
    primary = {e.name: e.primary_metric().name for e in evaluators}
    return [
        MetricColumn(
            e.name, m.name, primary[e.name] == m.name, e.threshold(m.name), m.higher_is_better
        )
        for e in evaluators
        for m in e.metrics
    ]


def _fmt(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def detail_rows(
    items: Sequence[ManifestItem], records: Sequence[CaseRecord], columns: Sequence[MetricColumn]
) -> tuple[list[str], list[list[str]]]:
    header = list(DETAIL_COLUMNS)
    for col in columns:
        header += [f"{col.metric} score", f"{col.metric} success", f"{col.metric} reason"]
    rows = []
    for item, record in zip(items, records, strict=True):
        case, response = item.case, record.response
        by_metric = {(r.evaluator, r.metric): r for r in record.results}
        row = [
            case.case_id,
            str(item.iteration),
            ", ".join(case.categories),
            case.question,
            case.expected_answer or "",
            response.answer if response else "",
            json.dumps(response.contexts, ensure_ascii=False) if response else "",
            json.dumps(response.documents, ensure_ascii=False) if response else "",
            _fmt(record.latency_ms, 1),
            "" if response is None or response.input_tokens is None else str(response.input_tokens),
            ""
            if response is None or response.output_tokens is None
            else str(response.output_tokens),
            record.status,
            record.error or "",
        ]
        for col in columns:
            r = by_metric.get((col.evaluator, col.metric))
            if r is None:
                row += ["", "", "not evaluated"]
            else:
                success = "" if r.success is None else str(r.success).lower()
                row += [_fmt(r.score), success, r.reason]
        rows.append(row)
    return header, rows


@dataclass
class MetricStats:
    column: MetricColumn
    average: float | None
    pass_rate: float | None
    count: int
    minimum: float | None
    maximum: float | None
    std: float | None
    skipped: int
    errored: int

    def as_json(self) -> dict[str, Any]:
        return {
            "metric": self.column.metric,
            "evaluator": self.column.evaluator,
            "primary": self.column.primary,
            "average": self.average,
            "pass_rate": self.pass_rate,
            "count": self.count,
            "min": self.minimum,
            "max": self.maximum,
            "std": self.std,
            "threshold": self.column.threshold,
            "higher_is_better": self.column.higher_is_better,
            "skipped": self.skipped,
            "errored": self.errored,
        }


def metric_stats(
    records: Sequence[CaseRecord], columns: Sequence[MetricColumn]
) -> list[MetricStats]:
    """Average over scored cases; pass rate over scored and errored ones (an answer that never
    came is a failure), skipped cases count in neither."""
    out = []
    for col in columns:
        results: list[MetricResult] = [
            r
            for rec in records
            for r in rec.results
            if r.evaluator == col.evaluator and r.metric == col.metric
        ]
        scored = [r for r in results if r.status == "scored" and r.score is not None]
        values = [r.score for r in scored if r.score is not None]
        errored = sum(1 for r in results if r.status == "error")
        skipped = sum(1 for r in results if r.status == "skipped")
        judged = len(scored) + errored
        passed = sum(1 for r in scored if r.success)
        out.append(
            MetricStats(
                column=col,
                average=statistics.fmean(values) if values else None,
                pass_rate=passed / judged if judged else None,
                count=len(values),
                minimum=min(values) if values else None,
                maximum=max(values) if values else None,
                std=statistics.stdev(values) if len(values) > 1 else None,
                skipped=skipped,
                errored=errored,
            )
        )
    return out


def result_rows(stats: Sequence[MetricStats]) -> tuple[list[str], list[list[str]]]:
    rows = [
        [
            s.column.metric,
            s.column.evaluator,
            str(s.column.primary).lower(),
            _fmt(s.average),
            _fmt(s.pass_rate),
            str(s.count),
            _fmt(s.minimum),
            _fmt(s.maximum),
            _fmt(s.std),
            _fmt(s.column.threshold, 2),
            str(s.column.higher_is_better).lower(),
            str(s.skipped),
            str(s.errored),
        ]
        for s in stats
    ]
    return list(RESULT_COLUMNS), rows
