"""The Robustness section of report.html: per perturbation its score, the metrics that
flipped, and the flipped cases side by side (original and perturbed question, both answers,
the metrics that flipped with their scores). Data from
:mod:`evalrunner.reports.analysis.robustness`; the page is drawn by
``templates/robustness.html.j2``."""

from __future__ import annotations

from dataclasses import dataclass, field

from evalrunner.reports.model import (
    CaseRow,
    PerturbationResult,
    ReportData,
    RobustnessFlip,
    RobustnessMetric,
)

#: Flipped cases shown per perturbation (problems.json and details.csv have them all).
FLIPPED_SHOWN = 20


@dataclass
class FlippedCase:
    case_id: str
    perturbed_case_id: str
    #: "broken" (pass → fail; antonym: still passes), or "fixed" (fail → pass)
    outcome: str
    original_question: str
    perturbed_question: str
    original_answer: str | None
    perturbed_answer: str | None
    flips: list[RobustnessFlip] = field(default_factory=list)
    #: misinformation: the false fact the judge planted, and the chunk before and after
    false_fact: str | None = None
    original_context: str | None = None
    falsified_context: str | None = None


@dataclass
class PerturbationView:
    result: PerturbationResult
    #: metrics with a flip or a delta, primary first
    metrics: list[RobustnessMetric]
    cases: list[FlippedCase]
    more: int


def _first(rows: list[CaseRow], case_id: str) -> CaseRow | None:
    return next((r for r in rows if r.case_id == case_id), None)


def _misinformation(row: CaseRow | None) -> dict[str, str | None]:
    """The false fact and the chunk it went into, before and after, of a misinformed case."""
    p = row.perturbation if row is not None else None
    if row is None or p is None or not p.false_fact:
        return {}
    index = (p.chunk or 0) - 1
    after = row.contexts[index] if 0 <= index < len(row.contexts) else None
    return {
        "false_fact": p.false_fact,
        "original_context": p.original_context,
        "falsified_context": after,
    }


def robustness_view(data: ReportData) -> list[PerturbationView]:
    """One view per perturbation, in the run's order."""
    out = []
    for p in data.robustness:
        metrics = sorted(
            (m for m in p.metrics if m.compared or m.delta is not None),
            key=lambda m: (not m.primary, -(m.pass_to_fail + m.fail_to_pass)),
        )
        listed = [(c, "broken") for c in p.broken_cases] + [(c, "fixed") for c in p.fixed_cases]
        cases = []
        for case_id, outcome in listed[:FLIPPED_SHOWN]:
            flips = [f for f in p.flips if f.case_id == case_id]
            perturbed_id = flips[0].perturbed_case_id if flips else ""
            original = _first(data.rows, case_id)
            perturbed = _first(data.perturbed_rows, perturbed_id) if perturbed_id else None
            if perturbed is None:
                perturbed = next(
                    (
                        r
                        for r in data.perturbed_rows
                        if r.perturbation is not None
                        and r.perturbation.of == case_id
                        and r.perturbation.name == p.name
                    ),
                    None,
                )
            cases.append(
                FlippedCase(
                    case_id=case_id,
                    perturbed_case_id=perturbed.case_id if perturbed else perturbed_id,
                    outcome=outcome,
                    original_question=original.question if original else "",
                    perturbed_question=perturbed.question if perturbed else "",
                    original_answer=original.answer if original else None,
                    perturbed_answer=perturbed.answer if perturbed else None,
                    flips=flips,
                    **_misinformation(perturbed),
                )
            )
        out.append(
            PerturbationView(
                result=p, metrics=metrics, cases=cases, more=max(0, len(listed) - FLIPPED_SHOWN)
            )
        )
    return out
