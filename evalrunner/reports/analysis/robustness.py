"""Robustness: which verdicts flipped when a case's question was perturbed (typos, OCR errors,
synonyms, ...) or rephrased by hand (a suite's ``variant_of`` column).

Rules:

- **Verdict of a case for a metric**: over its iterations, as in the regression check
  (:func:`evalrunner.reports.analysis.regression.case_passes`): a scored result passes when its
  ``success`` is true, an errored one (the evaluator, the target or the task failed) is a
  failure, skipped ones are ignored; no scored or errored result, no verdict.
- **Flip**: a metric's verdict differs between the original and its perturbed copy.
  pass → fail is a robustness failure, fail → pass is noted.
- **A case under a perturbation** is compared on the primary metrics with a verdict on both
  sides (none: not compared). It is *broken* when one of them flips pass → fail, *fixed*
  when none does and one flips fail → pass, else it *held*. For a perturbation that must
  change the answer (``antonym``) a case is compared when one of those metrics passed on the
  original, and it *holds* when one of them flips pass → fail; it is broken when none does
  (the answer ignored that the question was reversed; the expected answer is the original's,
  so a correct new answer fails it).
- **A perturbation with its own check** (``misinformation``: the judge planted a false fact
  in the context, and ``Misinformation handled`` says whether the answer followed it or
  flagged the conflict): a case is compared when its perturbed copy has a verdict on that
  metric, and it *held* when that verdict passes, else it is *broken*; a case whose rewrite
  failed (nothing was perturbed) is not compared. The other metrics'
  flips are listed, as for any perturbation (a flip of correctness is expected there: the
  context now says something else).
- **Robustness score** of a perturbation: held / compared (broken and fixed cases did not
  hold).
- **Per metric**: the same, metric by metric, with every metric of the run (not only the
  primary ones), and the delta of the metric's average (perturbed − original, over the
  originals scored on both sides) with a paired bootstrap interval
  (:func:`evalrunner.reports.analysis.bootstrap.delta_interval`, 95%, seeded by perturbation and
  metric).
- **Problem** ``robustness``, one per perturbation with a robustness failure: **high** when
  the failures are 20% of the compared cases or more, **medium** from 5%, else **low**.
- **Against the baseline**: a perturbation present in both runs is *worse* when a case whose
  verdict held under it in the baseline is broken now (any such case, as a case newly
  failing a primary metric is a regression).
"""

from __future__ import annotations

import statistics
import zlib
from collections.abc import Sequence

import numpy as np

from evalrunner.perturb.registry import KINDS
from evalrunner.reports.analysis._common import _names
from evalrunner.reports.analysis.bootstrap import delta_interval
from evalrunner.reports.model import (
    CaseRow,
    MetricInfo,
    PerturbationResult,
    Problem,
    ReportData,
    RobustnessChange,
    RobustnessFlip,
    RobustnessMetric,
    Severity,
)

HIGH_SHARE = 0.20
MEDIUM_SHARE = 0.05

#: What to look at first, per kind of perturbation.
_ADVICE: dict[str, str] = {
    "typos": "make retrieval tolerant of misspellings (fuzzy or embedding retrieval, a "
    "spelling-correction step before the query)",
    "char_replace": "make retrieval tolerant of misspellings (fuzzy or embedding retrieval)",
    "char_insert": "make retrieval tolerant of misspellings (fuzzy or embedding retrieval)",
    "char_delete": "make retrieval tolerant of misspellings (fuzzy or embedding retrieval)",
    "ocr": "normalise OCR confusions (0/o, 1/l, rn/m) before retrieval, or use embedding retrieval",
    "yz_swap": "make retrieval tolerant of misspellings (fuzzy or embedding retrieval)",
    "comma": "normalise punctuation before retrieval and prompting",
    "word_swap": "use retrieval that does not depend on word order",
    "synonym": "bridge synonyms (embedding or hybrid retrieval, query expansion)",
    "antonym": "check that the answer follows the question's meaning, not its keywords "
    "(a negated or reversed question must not get the same answer)",
    "misinformation": "make the generation step answer from the context it is given and say "
    "when its sources conflict (instruct it to cite the sources and flag contradictions); an "
    "answer from the model's own memory would also ignore a correction in the knowledge base",
}


def _verdict(rows: Sequence[CaseRow], info: MetricInfo) -> bool | None:
    """Whether the case (its rows, one per iteration) passes the metric; None: no verdict."""
    state: bool | None = None
    for row in rows:
        r = next(
            (x for x in row.results if x.evaluator == info.evaluator and x.metric == info.metric),
            None,
        )
        if r is None or r.status == "skipped":
            continue
        ok = r.status == "scored" and r.success is True
        state = ok if state is None else state and ok
    return state


def _scores(rows: Sequence[CaseRow], info: MetricInfo) -> list[float]:
    return [
        float(r.score)
        for row in rows
        for r in row.results
        if r.evaluator == info.evaluator
        and r.metric == info.metric
        and r.status == "scored"
        and r.score is not None
    ]


def analyse(data: ReportData) -> list[PerturbationResult]:
    """Every perturbation of the run (in the order of the manifest) and its flips."""
    originals: dict[str, list[CaseRow]] = {}
    for row in data.rows:
        originals.setdefault(row.case_id, []).append(row)
    groups: dict[str, dict[str, list[CaseRow]]] = {}  # name -> original id -> perturbed rows
    for row in data.perturbed_rows:
        assert row.perturbation is not None
        groups.setdefault(row.perturbation.name, {}).setdefault(row.perturbation.of, []).append(row)
    return [_one(name, cases, originals, data.metrics) for name, cases in groups.items() if cases]


def _one(
    name: str,
    cases: dict[str, list[CaseRow]],
    originals: dict[str, list[CaseRow]],
    metrics: list[MetricInfo],
) -> PerturbationResult:
    first = next(iter(cases.values()))[0].perturbation
    assert first is not None
    expect_flip = first.expect_flip
    check = first.check
    primary = [m.metric for m in metrics if m.primary]
    held_cases: list[str] = []
    broken: list[str] = []
    fixed: list[str] = []
    flips: list[RobustnessFlip] = []
    per_metric: dict[str, list[tuple[bool, bool]]] = {m.metric: [] for m in metrics}
    for case_id, rows in cases.items():
        base_rows = originals.get(case_id, [])
        before = {m.metric: _verdict(base_rows, m) for m in metrics}
        after = {m.metric: _verdict(rows, m) for m in metrics}
        for m in metrics:
            b, a = before[m.metric], after[m.metric]
            if b is None or a is None:
                continue
            per_metric[m.metric].append((b, a))
            if b != a:
                flips.append(
                    RobustnessFlip(
                        case_id=case_id,
                        perturbed_case_id=rows[0].case_id,
                        metric=m.metric,
                        before=b,
                        after=a,
                        before_score=_mean(_scores(base_rows, m)),
                        after_score=_mean(_scores(rows, m)),
                    )
                )
        common = [m for m in primary if before[m] is not None and after[m] is not None]
        down = [m for m in common if before[m] and not after[m]]
        up = [m for m in common if not before[m] and after[m]]
        if check is not None:  # the perturbed copy's own check decides (misinformation)
            if rows[0].perturbation is not None and rows[0].perturbation.error:
                continue  # nothing was perturbed (the judge's rewrite failed): not compared
            verdict = after.get(check)
            if verdict is not None:
                (held_cases if verdict else broken).append(case_id)
        elif expect_flip:
            if not any(before[m] for m in common):
                continue  # nothing passed: a reversed question can show nothing
            (held_cases if down else broken).append(case_id)
        elif down:
            broken.append(case_id)
        elif up:  # fail -> pass is noted; the verdict did not hold either
            fixed.append(case_id)
        elif common:
            held_cases.append(case_id)
    compared = len(held_cases) + len(broken) + len(fixed)
    return PerturbationResult(
        name=name,
        kind=first.kind,
        intensity=first.intensity,
        seed=first.seed,
        expect_flip=expect_flip,
        cases=len(cases),
        compared=compared,
        held=len(held_cases),
        score=len(held_cases) / compared if compared else None,
        held_cases=held_cases,
        broken_cases=broken,
        fixed_cases=fixed,
        metrics=[
            _metric(name, m, per_metric[m.metric], cases, originals, expect_flip) for m in metrics
        ],
        flips=flips,
    )


def _metric(
    name: str,
    info: MetricInfo,
    pairs: list[tuple[bool, bool]],
    cases: dict[str, list[CaseRow]],
    originals: dict[str, list[CaseRow]],
    expect_flip: bool,
) -> RobustnessMetric:
    compared: list[tuple[bool, bool]]
    if expect_flip:
        compared = [(b, a) for b, a in pairs if b]
        held = sum(1 for _, a in compared if not a)
    else:
        compared = pairs
        held = sum(1 for b, a in pairs if b == a)
    after = {c: _scores(rows, info) for c, rows in cases.items()}
    before = {c: _scores(originals.get(c, []), info) for c in cases}
    both = [c for c in cases if after[c] and before[c]]
    cur = {c: after[c] for c in both}
    base = {c: before[c] for c in both}
    cur_avg = _mean([v for c in both for v in cur[c]])
    base_avg = _mean([v for c in both for v in base[c]])
    delta = cur_avg - base_avg if cur_avg is not None and base_avg is not None else None
    low = high = None
    if delta is not None:
        rng = np.random.default_rng([0, zlib.crc32(f"{name}\x00{info.metric}".encode())])
        low, high = delta_interval(cur, base, rng=rng)
    return RobustnessMetric(
        metric=info.metric,
        evaluator=info.evaluator,
        primary=info.primary,
        higher_is_better=info.higher_is_better,
        compared=len(compared),
        held=held,
        score=held / len(compared) if compared else None,
        pass_to_fail=sum(1 for b, a in pairs if b and not a),
        fail_to_pass=sum(1 for b, a in pairs if a and not b),
        original_average=base_avg,
        perturbed_average=cur_avg,
        delta=delta,
        ci_low=low,
        ci_high=high,
    )


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _label(p: PerturbationResult) -> str:
    at = f"intensity {p.intensity:g}" if p.intensity is not None else ""
    how = ", ".join(x for x in (p.kind if p.name != p.kind else "", at) if x)
    return f"{p.name} ({how})" if how else p.name


def robustness_problems(data: ReportData) -> list[Problem]:
    """One ``robustness`` problem per perturbation with a robustness failure."""
    out = []
    for p in data.robustness:
        if not p.broken_cases:
            continue
        share = len(p.broken_cases) / p.compared
        severity: Severity = (
            "high" if share >= HIGH_SHARE else "medium" if share >= MEDIUM_SHARE else "low"
        )
        primary = {m.metric for m in data.metrics if m.primary}
        flipped: dict[str, int] = {}
        broken = set(p.broken_cases)
        for f in p.flips:
            if f.case_id in broken and f.metric in primary and f.before and not f.after:
                flipped[f.metric] = flipped.get(f.metric, 0) + 1
        named = list(flipped)
        score = f"robustness {p.score:.2f}" if p.score is not None else "no score"
        check = KINDS[p.kind].check if p.kind in KINDS else None
        if check is not None:
            named = [check]
            what = (
                f"{len(p.broken_cases)} of {p.compared} cases contradicted their context "
                f"without saying so once one chunk of it carried a false fact ({_label(p)}, "
                f"{score}): {check} failed (the answer neither followed the context nor "
                "flagged the conflict)"
            )
        elif p.expect_flip:
            what = (
                f"{len(p.broken_cases)} of {p.compared} passing cases still pass when the "
                f"question's meaning is reversed ({_label(p)}, {score}): the answer did not "
                "change"
            )
        else:
            metrics = ", ".join(f"{m} ({n})" for m, n in flipped.items())
            what = (
                f"Not robust to {_label(p)}: {len(p.broken_cases)} of {p.compared} cases fail "
                f"a primary metric they passed once their question is perturbed ({score}); "
                f"flipped pass → fail: {metrics}"
            )
            if p.fixed_cases:
                what += f"; {len(p.fixed_cases)} failing case(s) pass when perturbed"
        out.append(
            Problem(
                severity=severity,
                type="robustness",
                metric=named[0] if len(named) == 1 else None,
                description=what + ".",
                affected_cases=list(p.broken_cases),
                suggested_action=(
                    "compare the original and perturbed questions and answers in the report's "
                    "Robustness section (details.csv: rows with perturbation "
                    f"{p.name!r}); {_ADVICE.get(p.kind, 'make the target tolerant of it')}: "
                    f"{_names(p.broken_cases)}"
                ),
            )
        )
    return out


def compare_robustness(
    current: Sequence[PerturbationResult], baseline: Sequence[PerturbationResult]
) -> list[RobustnessChange]:
    """Each perturbation of both runs, current against baseline, in the current run's
    order."""
    before = {p.name: p for p in baseline}
    out = []
    for p in current:
        b = before.get(p.name)
        if b is None:
            continue
        broken_now = set(p.broken_cases)  # a fixed case did not hold either, but it is no loss
        newly = [c for c in b.held_cases if c in broken_now]
        out.append(
            RobustnessChange(
                name=p.name,
                baseline_score=b.score,
                current_score=p.score,
                newly_broken=newly,
                worse=bool(newly),
            )
        )
    return out


def change_text(change: RobustnessChange) -> str:
    """One reason line of the regression verdict."""

    def num(x: float | None) -> str:
        return "—" if x is None else f"{x:.2f}"

    n = len(change.newly_broken)
    return (
        f"robustness under {change.name} fell from {num(change.baseline_score)} to "
        f"{num(change.current_score)}: {n} case{'s' if n != 1 else ''} that held now "
        f"flip{'s' if n == 1 else ''}: {_names(change.newly_broken)}"
    )
