"""Agreement of each metric's verdicts with human verdicts, and the threshold that agrees best.

Definitions (the README repeats them; tests compute them by hand):

* Rows compared: labelled rows of the metric that have a score (an unscored row, skipped or
  errored, is counted apart as ``unscored``).
* **Accuracy**: share of rows where the run's verdict (its ``success`` at the run's threshold)
  equals the human's. **Cohen's kappa**: the same agreement corrected for chance
  (scikit-learn's ``cohen_kappa_score``); None when either side gave one verdict only (kappa is
  undefined then). **Failure precision / recall**: failures are the positive class; precision =
  rows both failed / rows the metric failed, recall = rows both failed / rows the human failed.
* **Best threshold**: among the observed scores t, the one whose verdicts (score ≥ t, or ≤ t
  for a lower-is-better metric) agree with the most human verdicts; ties go to the candidate
  nearest the current threshold, then to the lower one. It is suggested (written to
  thresholds.json) only when its kappa is above 0: a threshold no better than chance is not
  advice. Its 95% interval: the 2.5th and 97.5th
  percentiles of the best threshold over bootstrap resamples of the rows (seeded: the same
  input gives the same interval).
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, Field

from evalrunner.calibrate.labels import LabelledRow, MetricLabels

DEFAULT_BOOTSTRAP = 1000
#: Below this many labelled, scored rows a threshold is not suggested (too few to trust).
MIN_ROWS = 4


class Disagreement(BaseModel):
    case_id: str
    iteration: int
    question: str
    score: float
    metric_pass: bool
    human_pass: bool


class MetricAgreement(BaseModel):
    metric: str
    threshold: float
    higher_is_better: bool
    threshold_source: str
    labelled: int
    unscored: int
    compared: int
    human_failures: int
    accuracy: float | None = None
    kappa: float | None = None
    failure_precision: float | None = None
    failure_recall: float | None = None
    best_threshold: float | None = None
    best_accuracy: float | None = None
    best_kappa: float | None = None
    interval_low: float | None = None
    interval_high: float | None = None
    #: Why no threshold is suggested, when none is.
    note: str | None = None
    disagreements: list[Disagreement] = Field(default_factory=list)
    #: (score, human pass) of every compared row, for the plot.
    points: list[tuple[float, bool]] = Field(default_factory=list)


class Calibration(BaseModel):
    source: str
    labels: str | None = None
    bootstrap: int
    metrics: list[MetricAgreement]

    def thresholds(self) -> dict[str, float]:
        """The suggested thresholds, as the event's ``thresholds`` takes them: only where
        the best threshold agrees with the humans better than chance."""
        return {
            m.metric: m.best_threshold
            for m in self.metrics
            if m.best_threshold is not None and m.note is None
        }


def _kappa(a: np.ndarray, b: np.ndarray) -> float | None:
    if len(set(a.tolist())) < 2 or len(set(b.tolist())) < 2:
        return None  # one side gave one verdict only: chance agreement is 1, kappa undefined
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b))


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def _verdicts(scores: np.ndarray, threshold: np.ndarray, higher: bool) -> np.ndarray:
    """Verdicts of every score (columns) at every threshold (rows)."""
    t = threshold[:, None]
    return scores[None, :] >= t if higher else scores[None, :] <= t


def best_threshold(
    scores: np.ndarray, human: np.ndarray, higher: bool, current: float
) -> tuple[float, float]:
    """(threshold, agreement) by the rule of the module docstring."""
    candidates = np.unique(scores)
    agree = (_verdicts(scores, candidates, higher) == human[None, :]).mean(axis=1)
    best = agree.max()
    ties = candidates[np.isclose(agree, best)]
    order = np.lexsort((ties, np.abs(ties - current)))
    return float(ties[order[0]]), float(best)


def _bootstrap(
    scores: np.ndarray, human: np.ndarray, higher: bool, current: float, rounds: int
) -> tuple[float, float] | None:
    if rounds <= 0:
        return None
    rng = np.random.default_rng(0)
    picks = rng.integers(0, len(scores), size=(rounds, len(scores)))
    found = [best_threshold(scores[p], human[p], higher, current)[0] for p in picks]
    low, high = np.percentile(found, [2.5, 97.5])
    return float(low), float(high)


def agreement(labels: MetricLabels, rounds: int = DEFAULT_BOOTSTRAP) -> MetricAgreement:
    rows: list[LabelledRow] = [r for r in labels.rows if r.score is not None]
    out = MetricAgreement(
        metric=labels.metric,
        threshold=labels.threshold,
        higher_is_better=labels.higher_is_better,
        threshold_source=labels.threshold_source,
        labelled=len(labels.rows),
        unscored=len(labels.rows) - len(rows),
        compared=len(rows),
        human_failures=sum(1 for r in rows if not r.human),
    )
    if not rows:
        out.note = "no labelled row has a score"
        return out
    scores = np.array([r.score for r in rows], dtype=float)
    human = np.array([r.human for r in rows], dtype=bool)
    # the run's own verdict; recomputed at its threshold where the file lost it
    at_run = _verdicts(scores, np.array([labels.threshold]), labels.higher_is_better)[0]
    run = np.array(
        [
            r.success if r.success is not None else bool(v)
            for r, v in zip(rows, at_run, strict=True)
        ],
        dtype=bool,
    )
    out.accuracy = float((run == human).mean())
    out.kappa = _kappa(run, human)
    both_fail = int(((~run) & (~human)).sum())
    out.failure_precision = _ratio(both_fail, int((~run).sum()))
    out.failure_recall = _ratio(both_fail, int((~human).sum()))
    out.points = [(float(s), bool(h)) for s, h in zip(scores, human, strict=True)]
    out.disagreements = [
        Disagreement(
            case_id=r.case_id,
            iteration=r.iteration,
            question=r.question,
            score=float(r.score or 0.0),
            metric_pass=bool(v),
            human_pass=r.human,
        )
        for r, v in zip(rows, run, strict=True)
        if bool(v) != r.human
    ]
    if len(rows) < MIN_ROWS:
        out.note = f"only {len(rows)} labelled, scored rows; label at least {MIN_ROWS}"
        return out
    if human.all() or not human.any():
        out.note = "the humans gave one verdict only; label passes and failures both"
        return out
    t, best = best_threshold(scores, human, labels.higher_is_better, labels.threshold)
    out.best_threshold, out.best_accuracy = t, best
    at_best = _verdicts(scores, np.array([t]), labels.higher_is_better)[0]
    out.best_kappa = _kappa(at_best, human)
    if out.best_kappa is None or out.best_kappa <= 0:
        out.note = "no threshold agrees with the humans better than chance (kappa ≤ 0)"
    interval = _bootstrap(scores, human, labels.higher_is_better, labels.threshold, rounds)
    if interval is not None:
        out.interval_low, out.interval_high = interval
    return out


def calibrate(
    labels: list[MetricLabels],
    *,
    source: str,
    labels_source: str | None = None,
    rounds: int = DEFAULT_BOOTSTRAP,
) -> Calibration:
    """Agreement of every metric that has labelled rows."""
    return Calibration(
        source=source,
        labels=labels_source,
        bootstrap=rounds,
        metrics=[agreement(m, rounds) for m in labels if m.rows],
    )
