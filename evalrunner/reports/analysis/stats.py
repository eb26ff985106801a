"""Build the report data (rows, metric columns, statistics) and the tables of details.csv and
result.csv from it.

Every rendering (CSV, xlsx, JSON, HTML) reads the same :class:`CaseRow`, :class:`MetricInfo` and
:class:`MetricStats` built here, so no two reports of one run can disagree on a number.

The statistics rules are part of the README and users compare runs with them, so they change
only on purpose:

* **Scored results** are those with status ``scored`` and a score. The average, min, p10,
  median, max and std are over them only: a skipped case has no score (it is never scored 0)
  and an errored one has none either.
* **Pass rate** = passed / (scored + errored). An answer that never came (target error, failed
  task, evaluator error) is a failure, not a gap; otherwise a target that times out on its hard
  cases would look better than one that answers them badly.
* **Skipped** results count in neither; they are reported apart, as are errored ones.
* **Std** is the sample standard deviation (n − 1), None with fewer than 2 scores.
* **P10** is the 10th percentile by linear interpolation between order statistics
  (``statistics.quantiles(..., method="inclusive")``, the same as numpy's default
  ``percentile``): position 0.1 × (n − 1) in the sorted scores. With one score it is that score.
  **Median** is the middle score, or the mean of the two middle ones.
* **Instability** (run-wide entry only; None with one iteration): for each case (by case_id)
  with at least two scored iterations, the spread max − min of its scores; the mean of those
  spreads. None when no case has two scored iterations.
"""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Literal

from evalrunner.evaluators.base import Evaluator, MetricResult
from evalrunner.reports.model import CaseRow, CategoryStats, MetricInfo, MetricStats
from evalrunner.run import CaseRecord, ManifestItem

#: A typed table cell: the xlsx writer keeps the type (numbers stay numbers, so sorting and
#: colour scales work); the CSV tables format it as text.
Cell = str | int | float | bool | None

#: The fixed columns of details.csv, before the per-metric score/success/reason triplets.
DETAIL_COLUMNS: tuple[str, ...] = (
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
    "sanitized",
    "truncated",
    "notes",
)

#: Columns details.csv has after :data:`DETAIL_COLUMNS` when the run has perturbed cases
#: (or hand-written variants): which original a row perturbs, how, and the original question.
PERTURBATION_COLUMNS: tuple[str, ...] = (
    "perturbation_of",
    "perturbation",
    "perturbation_kind",
    "intensity",
    "seed",
    "original_question",
)

#: Columns details.csv has last among its fixed columns when the run has scripted
#: conversations: the conversation a row belongs to, and the turn ("all" on the row of the
#: whole conversation, which carries the conversation metrics).
CONVERSATION_COLUMNS: tuple[str, ...] = ("conversation_id", "turn")
#: The ``turn`` cell of a conversation's own row.
WHOLE_CONVERSATION = "all"

#: Columns of details.csv that hold free text of any length (wrapped in the xlsx).
LONG_TEXT_COLUMNS: frozenset[str] = frozenset(
    {
        "question",
        "expected_answer",
        "answer",
        "contexts",
        "documents",
        "error",
        "notes",
        "original_question",
    }
)

#: ``name``, ``Average Score`` and ``Pass rate`` are spelled as the seed test runner wrote
#: them, so a script written for its result.csv (one row per metric asked for, read by
#: ``name``) still reads ours; see :func:`seed_name`.
RESULT_COLUMNS: tuple[str, ...] = (
    "name",
    "Metric",
    "Evaluator",
    "Iteration",
    "Primary",
    "Average Score",
    "Pass rate",
    "Count",
    "Skipped",
    "Errored",
    "Min",
    "P10",
    "Median",
    "Max",
    "Std",
    "Instability",
    "Threshold",
    "Higher is better",
    "Category",
)

#: How each kind of column is written as text in the CSV files.
ColumnKind = Literal["text", "int", "bool", "latency", "number"]

#: Decimals of each numeric kind; latency keeps one (milliseconds), scores and rates four.
_DIGITS: dict[ColumnKind, int] = {"latency": 1, "number": 4}

_DETAIL_KINDS: dict[str, ColumnKind] = {
    "iteration": "int",
    "latency_ms": "latency",
    "input_tokens": "int",
    "output_tokens": "int",
    "sanitized": "bool",
    "truncated": "bool",
    "intensity": "number",
    "seed": "int",
    "turn": "int",
}

_RESULT_KINDS: dict[str, ColumnKind] = {
    "Primary": "bool",
    "Higher is better": "bool",
    "Count": "int",
    "Skipped": "int",
    "Errored": "int",
    **dict.fromkeys(
        (
            "Average Score",
            "Pass rate",
            "Min",
            "P10",
            "Median",
            "Max",
            "Std",
            "Instability",
            "Threshold",
        ),
        "number",
    ),
}

NOT_EVALUATED = "not evaluated"


# --- building the data ----------------------------------------------------------------------


def case_rows(items: Sequence[ManifestItem], records: Sequence[CaseRecord]) -> list[CaseRow]:
    """One row per case × iteration, in manifest order.

    ``records[i]`` must be the record of ``items[i]`` (Aggregate makes one for every item, a
    failed task included), so no case can be missing from the reports. Without a response (the
    target call or the task failed) the answer, token counts and cost are None and the context
    and document lists are empty: an answer of ``""`` means the target answered with nothing,
    None means it never answered.
    """
    rows = []
    for item, record in zip(items, records, strict=True):
        case, response = item.case, record.response
        rows.append(
            CaseRow(
                case_id=case.case_id,
                iteration=item.iteration,
                categories=list(case.categories),
                question=case.question,
                expected_answer=case.expected_answer,
                answer=response.answer if response else None,
                contexts=list(response.contexts) if response else [],
                documents=list(response.documents) if response else [],
                latency_ms=record.latency_ms,
                input_tokens=response.input_tokens if response else None,
                output_tokens=response.output_tokens if response else None,
                cost=response.cost if response else None,
                status=record.status,
                error=record.error,
                sanitized=record.sanitized,
                truncated=record.truncated,
                notes=list(record.notes),
                steps=list(response.steps) if response and response.steps else None,
                expected_tools=list(case.expected_tools) or None,
                expected_steps=list(case.expected_steps) or None,
                expected_contexts=list(case.expected_contexts),
                expected_documents=list(case.expected_documents),
                expected_intent=case.expected_intent,
                expected_tool=case.expected_tool,
                expected_data=case.expected_data,
                condition=case.condition,
                intent=response.intent if response else None,
                tool=response.tool if response else None,
                data=response.data if response else None,
                metadata=dict(case.metadata),
                results=list(record.results),
                perturbation=case.perturbation,
                conversation_id=case.conversation_id,
                turn=case.turn,
            )
        )
    return rows


def metric_infos(evaluators: Sequence[Evaluator]) -> list[MetricInfo]:
    """The run's metric columns, in evaluator order then each evaluator's metric order (the
    order the user asked for, and the column order of every report). The threshold is the
    evaluator's effective one, after the run's overrides."""
    out = []
    for evaluator in evaluators:
        primary = evaluator.primary_metric().name
        for spec in evaluator.metrics:
            out.append(
                MetricInfo(
                    metric=spec.name,
                    evaluator=evaluator.name,
                    primary=spec.name == primary,
                    threshold=evaluator.threshold(spec.name),
                    higher_is_better=spec.higher_is_better,
                )
            )
    return out


def _result_of(row: CaseRow, info: MetricInfo) -> MetricResult | None:
    """A row's result for a metric column, matched on evaluator and metric both: two evaluators
    may name a metric alike, and a score must never land in the other one's column."""
    return next(
        (r for r in row.results if r.evaluator == info.evaluator and r.metric == info.metric),
        None,
    )


def column_results(row: CaseRow, metrics: Sequence[MetricInfo]) -> list[MetricResult | None]:
    """:func:`_result_of` for every metric column at once, from one pass over the row's
    results (the first of a column's results wins, as there): a table that reads each of a
    row's columns, and the statistics of every metric, look each result up once."""
    found: dict[tuple[str, str], MetricResult] = {}
    for result in row.results:
        found.setdefault((result.evaluator, result.metric), result)
    return [found.get((info.evaluator, info.metric)) for info in metrics]


def _scores(results: Sequence[MetricResult]) -> list[float]:
    return [r.score for r in results if r.status == "scored" and r.score is not None]


def _p10(values: Sequence[float]) -> float:
    """10th percentile, linear interpolation at position 0.1 × (n − 1) of the sorted values.

    ``statistics.quantiles`` needs two values before Python 3.13; with one, every percentile of
    the inclusive definition is that value."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[0]


def _instability(rows: Sequence[CaseRow], column: Sequence[MetricResult | None]) -> float | None:
    """Mean over cases of the spread (max − min) of the case's scores across iterations, over
    cases with at least two scored iterations: how far a rerun of the same case can move.
    ``column`` holds each row's result for the metric."""
    by_case: dict[str, list[float]] = defaultdict(list)
    for row, result in zip(rows, column, strict=True):
        if result is not None and result.status == "scored" and result.score is not None:
            by_case[row.case_id].append(result.score)
    spreads = [max(v) - min(v) for v in by_case.values() if len(v) >= 2]
    return statistics.fmean(spreads) if spreads else None


def _stats(
    rows: Sequence[CaseRow], info: MetricInfo, iteration: int | None, instability: float | None
) -> MetricStats:
    return _column_stats([_result_of(row, info) for row in rows], info, iteration, instability)


def _column_stats(
    column: Sequence[MetricResult | None],
    info: MetricInfo,
    iteration: int | None,
    instability: float | None,
) -> MetricStats:
    """The statistics of one metric over its results (None: the row has none)."""
    results = [r for r in column if r is not None]
    values = _scores(results)
    scored = [r for r in results if r.status == "scored" and r.score is not None]
    errored = sum(1 for r in results if r.status == "error")
    skipped = sum(1 for r in results if r.status == "skipped")
    judged = len(scored) + errored
    passed = sum(1 for r in scored if r.success is True)
    return MetricStats(
        metric=info.metric,
        evaluator=info.evaluator,
        iteration=iteration,
        primary=info.primary,
        threshold=info.threshold,
        higher_is_better=info.higher_is_better,
        average=statistics.fmean(values) if values else None,
        pass_rate=passed / judged if judged else None,
        count=len(values),
        skipped=skipped,
        errored=errored,
        min=min(values) if values else None,
        p10=_p10(values) if values else None,
        median=statistics.median(values) if values else None,
        max=max(values) if values else None,
        std=statistics.stdev(values) if len(values) > 1 else None,
        instability=instability,
    )


def compute_stats(
    rows: Sequence[CaseRow], metrics: Sequence[MetricInfo], iterations: int
) -> list[MetricStats]:
    """Statistics of every metric: first the run-wide entries (iteration None) of all metrics in
    metric order, then, when the run has more than one iteration, the entries of iteration 1,
    2, ... each in metric order. The rules are in this module's docstring.

    ``iterations`` is the run's configured count, not read from the rows: an iteration whose
    cases all failed still gets its entries, and instability is None for a one-iteration run
    even if a case id were repeated.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1, got {iterations}")
    table = [column_results(row, metrics) for row in rows]
    out = []
    for i, info in enumerate(metrics):
        column = [cells[i] for cells in table]
        instability = _instability(rows, column) if iterations > 1 else None
        out.append(_column_stats(column, info, None, instability))
    if iterations > 1:
        for iteration in range(1, iterations + 1):
            subset = [
                cells for row, cells in zip(rows, table, strict=True) if row.iteration == iteration
            ]
            out += [
                _column_stats([cells[i] for cells in subset], info, iteration, None)
                for i, info in enumerate(metrics)
            ]
    return out


# --- tables ---------------------------------------------------------------------------------


def _text(value: Cell, kind: ColumnKind) -> str:
    """A cell as CSV text. Formatting goes by column, not by value type, so a latency of 5
    reads ``5.0`` like every other latency."""
    if value is None:
        return ""
    if kind == "bool":
        return str(bool(value)).lower()
    if kind in _DIGITS:
        return f"{float(value):.{_DIGITS[kind]}f}"
    return str(value)


def has_perturbations(rows: Sequence[CaseRow]) -> bool:
    """Whether details.csv carries :data:`PERTURBATION_COLUMNS` for these rows."""
    return any(row.perturbation is not None for row in rows)


def has_conversations(rows: Sequence[CaseRow]) -> bool:
    """Whether details.csv carries :data:`CONVERSATION_COLUMNS` for these rows."""
    return any(row.conversation_id is not None for row in rows)


def fixed_columns(perturbed: bool = False, conversations: bool = False) -> tuple[str, ...]:
    """The columns before the metric triplets."""
    return (
        DETAIL_COLUMNS
        + (PERTURBATION_COLUMNS if perturbed else ())
        + (CONVERSATION_COLUMNS if conversations else ())
    )


def detail_header(
    metrics: Sequence[MetricInfo], perturbed: bool = False, conversations: bool = False
) -> list[str]:
    """details.csv's header: the fixed columns (and the perturbation and conversation columns
    when the run has perturbed cases / conversations), then score/success/reason per metric."""
    header = list(fixed_columns(perturbed, conversations))
    for info in metrics:
        header += [f"{info.metric} score", f"{info.metric} success", f"{info.metric} reason"]
    return header


def detail_kinds(
    metrics: Sequence[MetricInfo], perturbed: bool = False, conversations: bool = False
) -> list[ColumnKind]:
    """The kind of each column of :func:`detail_header`, in the same order."""
    kinds: list[ColumnKind] = [
        _DETAIL_KINDS.get(c, "text") for c in fixed_columns(perturbed, conversations)
    ]
    for _ in metrics:
        kinds += ["number", "bool", "text"]
    return kinds


def detail_cells(
    row: CaseRow,
    metrics: Sequence[MetricInfo],
    perturbed: bool = False,
    conversations: bool = False,
) -> list[Cell]:
    """One details row as typed cells (None: empty).

    Contexts and documents are JSON lists when the target answered, empty when it did not (a
    row without a response has no answer: ``answer`` is None exactly then). A metric without
    any result for the row reads "not evaluated"."""
    answered = row.answer is not None
    cells: list[Cell] = [
        row.case_id,
        row.iteration,
        ", ".join(row.categories),
        row.question,
        row.expected_answer or "",
        row.answer or "",
        json.dumps(row.contexts, ensure_ascii=False) if answered else "",
        json.dumps(row.documents, ensure_ascii=False) if answered else "",
        row.latency_ms,
        row.input_tokens,
        row.output_tokens,
        row.status,
        row.error or "",
        row.sanitized,
        row.truncated,
        "\n".join(row.notes),
    ]
    if perturbed:
        p = row.perturbation
        cells += (
            [p.of, p.name, p.kind, p.intensity, p.seed, p.original_question]
            if p is not None
            else [None] * len(PERTURBATION_COLUMNS)
        )
    if conversations:
        turn: Cell = WHOLE_CONVERSATION if row.is_conversation else row.turn
        cells += [row.conversation_id, turn]
    for result in column_results(row, metrics):
        if result is None:
            cells += [None, None, NOT_EVALUATED]
        else:
            cells += [result.score, result.success, result.reason]
    return cells


def detail_table(
    rows: Sequence[CaseRow], metrics: Sequence[MetricInfo]
) -> tuple[list[str], list[list[str]]]:
    """details.csv: header and text rows. Same columns and number formats as before the report
    data existed (latency 1 decimal, scores 4, success ``true``/``false``), so files written
    before and after compare cell by cell."""
    header, body = detail_lines(rows, metrics)
    return header, list(body)


def detail_lines(
    rows: Sequence[CaseRow], metrics: Sequence[MetricInfo]
) -> tuple[list[str], Iterator[list[str]]]:
    """:func:`detail_table` with its body made a row at a time, for a writer that streams it
    (Aggregate: the text of every cell of a big run is never held at once)."""
    perturbed, conversations = has_perturbations(rows), has_conversations(rows)
    kinds = detail_kinds(metrics, perturbed, conversations)
    body = (
        [
            _text(value, kind)
            for value, kind in zip(
                detail_cells(row, metrics, perturbed, conversations), kinds, strict=True
            )
        ]
        for row in rows
    )
    return detail_header(metrics, perturbed, conversations), body


def ordered_stats(stats: Sequence[MetricStats]) -> list[MetricStats]:
    """Run-wide entries first, then iteration 1, 2, ...; metric order kept within each block
    (a stable sort, so the order :func:`compute_stats` produces is unchanged)."""
    return sorted(stats, key=lambda s: 0 if s.iteration is None else s.iteration)


def seed_name(s: MetricStats) -> str:
    """The ``name`` cell: what the seed runner wrote for the metric it was asked for. The
    run-wide row of an evaluator's primary metric carries the evaluator's name (``Rouge
    Metric``, ``BERT Score``, ``Faithfulness``), the run-wide rows of its other metrics their
    own; per-iteration rows leave it empty, so a script that keys rows by ``name`` reads the
    run-wide figures, one row per name."""
    if s.iteration is not None:
        return ""
    return s.evaluator if s.primary else s.metric


def result_cells(s: MetricStats) -> list[Cell]:
    """One result.csv row as typed cells, in :data:`RESULT_COLUMNS` order; iteration "all" for
    a run-wide entry."""
    return [
        seed_name(s),
        s.metric,
        s.evaluator,
        "all" if s.iteration is None else s.iteration,
        s.primary,
        s.average,
        s.pass_rate,
        s.count,
        s.skipped,
        s.errored,
        s.min,
        s.p10,
        s.median,
        s.max,
        s.std,
        s.instability,
        s.threshold,
        s.higher_is_better,
        "",
    ]


def result_kinds() -> list[ColumnKind]:
    """The kind of each of :data:`RESULT_COLUMNS`."""
    return [_RESULT_KINDS.get(c, "text") for c in RESULT_COLUMNS]


def category_cells(c: CategoryStats) -> list[Cell]:
    """A per-category result.csv row: the metric over the category's cases (``Category``
    set, ``Iteration`` and ``name`` empty so scripts keyed on either read run-wide rows)."""
    cells: dict[str, Cell] = {
        "Metric": c.metric,
        "Evaluator": c.evaluator,
        "Primary": c.primary,
        "Average Score": c.average,
        "Pass rate": c.pass_rate,
        "Count": c.count,
        "Skipped": c.skipped,
        "Errored": c.errored,
        "Category": c.category,
    }
    return [cells.get(column) for column in RESULT_COLUMNS]


def result_table(
    stats: Sequence[MetricStats], categories: Sequence[CategoryStats] = ()
) -> tuple[list[str], list[list[str]]]:
    """result.csv: run-wide rows (Iteration "all") of every metric first, then the
    per-iteration rows, then one row per metric × category the suite uses. Numbers with 4
    decimals, empty when there is nothing to compute."""
    kinds = result_kinds()
    cells = [result_cells(s) for s in ordered_stats(stats)]
    cells += [category_cells(c) for c in categories]
    body = [[_text(value, kind) for value, kind in zip(row, kinds, strict=True)] for row in cells]
    return list(RESULT_COLUMNS), body
