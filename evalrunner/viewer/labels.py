"""A reviewer's verdicts on a run's metric verdicts, stored beside the run.

The file is ``<stamp>-labels.csv`` next to the run's other reports (locally, or in the bucket),
in the layout ``evalrunner calibrate --labels`` reads (:mod:`evalrunner.calibrate.labels`):
``case_id``, ``iteration``, and per labelled metric a ``human_verdict <metric>`` column
(pass/fail) with a ``note <metric>`` column beside it (calibrate ignores columns it does not
know). So calibration is ``evalrunner calibrate <stamp>-details.csv --labels
<stamp>-labels.csv``, and the agreement the viewer shows is that same computation
(:func:`evalrunner.calibrate.agreement.agreement`) on the run's own scores.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable

from pydantic import BaseModel, Field

from evalrunner.calibrate.agreement import Calibration, MetricAgreement, agreement, calibrate
from evalrunner.calibrate.labels import HUMAN, LabelledRow, MetricLabels
from evalrunner.errors import ConfigError
from evalrunner.reports.writers.formulas import is_formula_like, neutralise
from evalrunner.viewer.loaded import LoadedRun

LABELS = "labels.csv"
NOTE = "note"
#: Bootstrap rounds for the threshold interval shown while labelling (calibrate's default
#: is 1000; the page is redrawn on every label, the CLI gives the final figure).
ROUNDS = 200
#: A note's longest (the form's maxlength; a longer one in a hand-edited file is cut).
NOTE_CHARS = 2000


class Label(BaseModel):
    case_id: str
    iteration: int
    metric: str
    #: the reviewer says the metric's verdict should be pass (True) or fail (False)
    human_pass: bool
    note: str = Field(default="", max_length=NOTE_CHARS)


def parse_labels(data: bytes) -> list[Label]:
    """The labels a viewer wrote (also a hand-edited file in the same layout). A file that
    cannot be one (not UTF-8, an iteration that is no whole number) is a :class:`ConfigError`
    naming the line, which the pages show, rather than a server error; a note longer than a
    label's is cut, as the form cuts it."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        said = f"{exc.reason} at byte {exc.start}"
        raise ConfigError(f"{LABELS} is not UTF-8 text ({said}); save it as UTF-8") from None
    reader = csv.DictReader(io.StringIO(text))
    out: list[Label] = []
    prefix = f"{HUMAN} "
    for record in reader:
        for column, value in record.items():
            if not column or not column.startswith(prefix) or not (value or "").strip():
                continue
            metric = column[len(prefix) :]
            verdict = value.strip().lower()
            if verdict not in ("pass", "fail"):
                continue
            try:
                iteration = int(record.get("iteration") or 1)
            except ValueError:
                raise ConfigError(
                    f"{LABELS} line {reader.line_num}: iteration "
                    f"{str(record.get('iteration'))[:40]!r} is not a whole number; fix or "
                    "remove that row"
                ) from None
            out.append(
                Label(
                    case_id=_restored(record.get("case_id") or ""),
                    iteration=iteration,
                    metric=metric,
                    human_pass=verdict == "pass",
                    note=_restored(record.get(f"{NOTE} {metric}") or "")[:NOTE_CHARS],
                )
            )
    return out


def _restored(cell: str) -> str:
    """A cell as it was before :func:`neutralise` defused it (the apostrophe taken off again
    only where the rest could run as a formula: a label keeps matching its case's id)."""
    return cell[1:] if cell.startswith("'") and is_formula_like(cell[1:]) else cell


def dump_labels(labels: list[Label]) -> bytes:
    """The labels as calibrate's csv: one row per case × iteration, two columns per metric.
    A case id or note that a spreadsheet could run as a formula (``=HYPERLINK(...)``: ids
    come from the suite, notes from a reviewer) is defused as details.csv defuses it, so the
    file opens safely and its ids match details.csv's for ``evalrunner calibrate``."""
    metrics = list(dict.fromkeys(label.metric for label in labels))
    rows: dict[tuple[str, int], dict[str, str]] = {}
    for label in labels:
        row = rows.setdefault(
            (label.case_id, label.iteration),
            {"case_id": neutralise(label.case_id), "iteration": str(label.iteration)},
        )
        row[f"{HUMAN} {label.metric}"] = "pass" if label.human_pass else "fail"
        row[f"{NOTE} {label.metric}"] = neutralise(label.note)
    header = ["case_id", "iteration"]
    for metric in metrics:
        header += [f"{HUMAN} {metric}", f"{NOTE} {metric}"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for key in sorted(rows):
        writer.writerow(rows[key])
    return buffer.getvalue().encode("utf-8")


def upsert(labels: list[Label], new: Label) -> list[Label]:
    """``labels`` with ``new`` replacing any label of the same case × iteration × metric."""
    key = (new.case_id, new.iteration, new.metric)
    return [x for x in labels if (x.case_id, x.iteration, x.metric) != key] + [new]


def adding(new: Label) -> Callable[[bytes | None], bytes]:
    """The change that adds ``new`` to a labels file's bytes (None: no file yet): what a save
    applies, and applies again to the file as it is now when another reviewer saved first."""

    def change(current: bytes | None) -> bytes:
        return dump_labels(upsert(parse_labels(current) if current else [], new))

    return change


def metric_labels(run: LoadedRun, labels: list[Label]) -> list[MetricLabels]:
    """Per labelled metric, the run's score and verdict beside each human verdict: what
    ``read_labelled_run`` makes of a details file, made from the run's own report."""
    out: list[MetricLabels] = []
    for info in run.head.metrics:
        mine = [x for x in labels if x.metric == info.metric]
        if not mine:
            continue
        entry = MetricLabels(
            metric=info.metric,
            threshold=info.threshold,
            higher_is_better=info.higher_is_better,
            threshold_source="run",
        )
        for label in mine:
            n = run.find(label.case_id, label.iteration)
            row = run.row(n) if n is not None else None
            result = row.result(info.metric) if row is not None else None
            entry.rows.append(
                LabelledRow(
                    case_id=label.case_id,
                    iteration=label.iteration,
                    question=row.question if row is not None else "",
                    score=result.score if result is not None else None,
                    success=result.success if result is not None else None,
                    human=label.human_pass,
                )
            )
        out.append(entry)
    return out


def agreements(run: LoadedRun, labels: list[Label]) -> list[MetricAgreement]:
    """Evaluator–human agreement per labelled metric, computed by calibrate's own code on the
    run's scores and thresholds."""
    return [agreement(m, rounds=ROUNDS) for m in metric_labels(run, labels)]


def calibration(run: LoadedRun, labels: list[Label], where: str) -> Calibration:
    """``evalrunner calibrate`` of the run with these labels (its full bootstrap)."""
    return calibrate(metric_labels(run, labels), source=where, labels_source=where + LABELS)
