"""evalrunner calibrate on a fixed labelled run: every number below is computed by hand.

ROUGE-L (higher is better, run threshold 0.5), eight rows:

    score   0.9 0.8 0.7 0.6 0.55 0.4 0.3 0.2
    run     P   P   P   P   P    F   F   F      (score >= 0.5)
    human   P   P   P   F   F    P   F   F

agree 5/8 = 0.625; P(run pass) = 5/8, P(human pass) = 4/8, chance = 5/8·4/8 + 3/8·4/8 = 0.5,
kappa = (0.625 − 0.5) / (1 − 0.5) = 0.25; failures: both fail 2, run fails 3, human fails 4 →
precision 2/3, recall 1/2. Thresholds 0.9 0.8 0.7 0.6 0.55 0.4 0.3 0.2 agree with 5 6 7 6 5 6
5 4 rows: the best is 0.7 (7/8), where kappa = (0.875 − 0.5) / 0.5 = 0.75.
"""

from __future__ import annotations

import json

import pytest
from openpyxl import load_workbook
from typer.testing import CliRunner

from evalrunner.calibrate import calibrate, read_labelled_run
from evalrunner.calibrate.agreement import best_threshold
from evalrunner.cli import app
from evalrunner.errors import SuiteError
from evalrunner.evaluators.base import MetricResult
from evalrunner.event import parse_event
from evalrunner.reports.model import CaseRow, MetricInfo
from evalrunner.reports.writers.xlsx import details_xlsx

SCORES = [0.9, 0.8, 0.7, 0.6, 0.55, 0.4, 0.3, 0.2]
HUMAN = ["pass", "pass", "pass", "fail", "fail", "pass", "fail", "fail"]
#: Token F1 with the opposite labels on two rows, given per metric.
F1_HUMAN = ["pass", "pass", "fail", "fail", "fail", "fail", "fail", "fail"]

INFOS = [
    MetricInfo(
        metric="ROUGE-L",
        evaluator="Rouge Metric",
        primary=True,
        threshold=0.5,
        higher_is_better=True,
    ),
    MetricInfo(
        metric="Token F1", evaluator="Token F1", primary=True, threshold=0.5, higher_is_better=True
    ),
]


def _rows() -> list[CaseRow]:
    rows = []
    for i, value in enumerate(SCORES, start=1):
        rows.append(
            CaseRow(
                case_id=f"c{i}",
                iteration=1,
                question=f"question {i}",
                answer="a",
                status="ok",
                results=[
                    MetricResult(
                        evaluator=info.evaluator,
                        metric=info.metric,
                        status="scored",
                        score=value,
                        success=value >= 0.5,
                        threshold=0.5,
                        reason="r",
                    )
                    for info in INFOS
                ],
            )
        )
    return rows


def _labelled_xlsx(tmp_path, per_metric: bool = True):
    """The runner's own details.xlsx, with a reviewer's columns added to the Details sheet."""
    path = tmp_path / "241123-120000-details.xlsx"
    path.write_bytes(details_xlsx(_rows(), INFOS))
    book = load_workbook(path)
    sheet = book["Details"]
    last = sheet.max_column
    sheet.cell(row=1, column=last + 1, value="human_verdict")
    if per_metric:
        sheet.cell(row=1, column=last + 2, value="human_verdict Token F1")
    for i in range(len(SCORES)):
        sheet.cell(row=i + 2, column=last + 1, value=HUMAN[i])
        if per_metric:
            sheet.cell(row=i + 2, column=last + 2, value=F1_HUMAN[i])
    book.save(path)
    return path


def test_hand_computed_agreement_kappa_and_best_threshold(tmp_path):
    result = calibrate(read_labelled_run(_labelled_xlsx(tmp_path)), source="run", rounds=200)
    rouge = next(m for m in result.metrics if m.metric == "ROUGE-L")
    assert rouge.threshold_source == "run"  # read from the workbook's Results sheet
    assert rouge.compared == 8 and rouge.human_failures == 4
    assert rouge.accuracy == pytest.approx(0.625)
    assert rouge.kappa == pytest.approx(0.25)
    assert rouge.failure_precision == pytest.approx(2 / 3)
    assert rouge.failure_recall == pytest.approx(0.5)
    assert rouge.best_threshold == pytest.approx(0.7)
    assert rouge.best_accuracy == pytest.approx(0.875)
    assert rouge.best_kappa == pytest.approx(0.75)
    assert [d.case_id for d in rouge.disagreements] == ["c4", "c5", "c6"]
    assert rouge.interval_low is not None and rouge.interval_high is not None
    assert rouge.interval_low <= 0.7 <= rouge.interval_high
    # the per-metric column overrides the row's verdict: Token F1 agrees best at 0.8
    f1 = next(m for m in result.metrics if m.metric == "Token F1")
    assert f1.human_failures == 6
    assert f1.best_threshold == pytest.approx(0.8) and f1.best_accuracy == 1.0
    assert f1.kappa == pytest.approx((5 / 8 - (5 / 8 * 2 / 8 + 3 / 8 * 6 / 8)) / (1 - 0.4375))


def test_same_input_gives_the_same_interval(tmp_path):
    rows = read_labelled_run(_labelled_xlsx(tmp_path))
    first = calibrate(rows, source="run", rounds=300).metrics[0]
    again = calibrate(rows, source="run", rounds=300).metrics[0]
    assert (first.interval_low, first.interval_high) == (again.interval_low, again.interval_high)


def test_ties_go_to_the_candidate_nearest_the_current_threshold():
    import numpy as np

    scores = np.array([0.9, 0.3, 0.6, 0.1])
    human = np.array([True, False, True, False])  # only t = 0.6 agrees on all four
    assert best_threshold(scores, human, True, 0.5) == (0.6, 1.0)
    human = np.array([True, True, False, False])  # 0.9 and 0.3 agree 3/4, 0.6 and 0.1 2/4
    t, agree = best_threshold(scores, human, True, 0.8)
    assert agree == 0.75 and t == pytest.approx(0.9)  # nearer 0.8 than 0.3 is


def test_lower_is_better_metric_passes_at_or_below_the_threshold(tmp_path):
    import numpy as np

    scores = np.array([0.1, 0.2, 0.7, 0.9])
    human = np.array([True, True, False, False])
    assert best_threshold(scores, human, False, 0.5) == (0.2, 1.0)


def test_cli_writes_thresholds_the_event_accepts(tmp_path):
    path = _labelled_xlsx(tmp_path)
    out = tmp_path / "cal"
    result = CliRunner().invoke(
        app, ["calibrate", str(path), "--out", str(out), "--bootstrap", "100"]
    )
    assert result.exit_code == 0, result.output
    thresholds = json.loads((out / "thresholds.json").read_text())
    assert thresholds == {"ROUGE-L": pytest.approx(0.7), "Token F1": pytest.approx(0.8)}
    event = parse_event(
        {
            "key": "test-suites/s.csv",
            "iterations": 1,
            "target": {"url": "http://x/"},
            "metrics": ["Rouge Metric", "Token F1"],
            "thresholds": thresholds,
        }
    )
    assert event.thresholds == thresholds
    page = (out / "calibration.html").read_text()
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    assert len(soup.select("svg circle")) == 16  # one point per compared row and metric
    assert "c4" in soup.get_text() and "25.0%" not in soup.get_text()
    assert json.loads((out / "calibration.json").read_text())["metrics"][0]["kappa"] == 0.25


def test_labels_in_a_separate_csv_match_by_case_and_apply_to_every_iteration(tmp_path):
    details = tmp_path / "details.xlsx"
    details.write_bytes(details_xlsx(_rows(), INFOS))
    labels = tmp_path / "labels.csv"
    labels.write_text(
        "case_id,human_verdict\n" + "".join(f"c{i + 1},{v}\n" for i, v in enumerate(HUMAN))
    )
    rows = read_labelled_run(details, labels)
    rouge = calibrate(rows, source="run", rounds=0).metrics[0]
    assert rouge.kappa == pytest.approx(0.25) and rouge.interval_low is None


def test_details_csv_with_result_csv_beside_it(tmp_path):
    from evalrunner.reports.analysis.stats import compute_stats, detail_table, result_table
    from evalrunner.reports.writers.csv_writer import to_csv

    rows = _rows()
    header, body = detail_table(rows, INFOS)
    header.append("human_verdict")
    for line, verdict in zip(body, HUMAN, strict=True):
        line.append(verdict)
    (tmp_path / "x-details.csv").write_bytes(to_csv(header, body))
    (tmp_path / "x-result.csv").write_bytes(to_csv(*result_table(compute_stats(rows, INFOS, 1))))
    rouge = calibrate(read_labelled_run(tmp_path / "x-details.csv"), source="x", rounds=0).metrics[
        0
    ]
    assert rouge.threshold_source == "run" and rouge.best_threshold == pytest.approx(0.7)


def test_a_bad_verdict_names_row_and_column_and_the_cli_exits_2(tmp_path):
    labels = tmp_path / "labels.csv"
    labels.write_text("case_id,human_verdict\nc1,pass\nc2,maybe\n")
    details = tmp_path / "details.xlsx"
    details.write_bytes(details_xlsx(_rows(), INFOS))
    with pytest.raises(SuiteError) as err:
        read_labelled_run(details, labels)
    assert "row 3" in err.value.message and "human_verdict" in err.value.message
    result = CliRunner().invoke(
        app, ["calibrate", str(details), "--labels", str(labels), "--out", str(tmp_path / "o")]
    )
    assert result.exit_code == 2 and "maybe" in result.output
    assert not (tmp_path / "o").exists()


def test_no_labels_at_all_is_a_clear_error(tmp_path):
    details = tmp_path / "details.xlsx"
    details.write_bytes(details_xlsx(_rows(), INFOS))
    with pytest.raises(SuiteError, match="human_verdict"):
        read_labelled_run(details)


def test_a_threshold_no_better_than_chance_is_not_suggested(tmp_path):
    from evalrunner.calibrate.labels import LabelledRow, MetricLabels

    # the humans fail the high scores and pass the low ones: no threshold of a
    # higher-is-better metric agrees better than chance
    rows = [
        LabelledRow(case_id=f"c{i}", iteration=1, score=s, success=s >= 0.5, human=s < 0.5)
        for i, s in enumerate([0.9, 0.8, 0.2, 0.1])
    ]
    labels = MetricLabels(
        metric="ROUGE-L", threshold=0.5, higher_is_better=True, threshold_source="run", rows=rows
    )
    result = calibrate([labels], source="x", rounds=0)
    assert result.metrics[0].kappa == pytest.approx(-1.0)
    assert result.metrics[0].note is not None and "chance" in result.metrics[0].note
    assert result.thresholds() == {}


def test_labels_in_another_sheet_of_the_workbook(tmp_path):
    path = tmp_path / "details.xlsx"
    path.write_bytes(details_xlsx(_rows(), INFOS))
    book = load_workbook(path)
    sheet = book.create_sheet("Review")
    sheet.append(["case_id", "iteration", "human_verdict"])
    for i, verdict in enumerate(HUMAN, start=1):
        sheet.append([f"c{i}", 1, verdict])
    book.save(path)
    rouge = calibrate(read_labelled_run(path), source="run", rounds=0).metrics[0]
    assert rouge.compared == 8 and rouge.kappa == pytest.approx(0.25)
