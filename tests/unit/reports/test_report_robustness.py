"""Flip analysis: per perturbation and metric, the verdicts that flipped, the robustness
score, the problem, the report section, details.csv's columns and the baseline check."""

from __future__ import annotations

import pytest

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.problems import find_problems
from evalrunner.reports.analysis.regression import compare
from evalrunner.reports.analysis.robustness import analyse, compare_robustness, robustness_problems
from evalrunner.reports.analysis.stats import PERTURBATION_COLUMNS, compute_stats, detail_table
from evalrunner.reports.model import CaseRow, MetricInfo, ReportData
from evalrunner.reports.summary import RegressionVerdict, RobustnessSummary
from evalrunner.reports.views.html import render_report
from evalrunner.suite.model import Perturbation

ROUGE = MetricInfo(
    metric="ROUGE-L", evaluator="Rouge Metric", primary=True, threshold=0.5, higher_is_better=True
)
BLEU = MetricInfo(
    metric="BLEU-4", evaluator="Rouge Metric", primary=False, threshold=0.5, higher_is_better=True
)


def res(info: MetricInfo, score: float) -> MetricResult:
    return MetricResult(
        evaluator=info.evaluator,
        metric=info.metric,
        status="scored",
        score=score,
        success=score >= info.threshold,
        threshold=info.threshold,
        reason="r",
    )


def row(case_id: str, rouge: float, p: Perturbation | None = None, bleu: float = 0.9) -> CaseRow:
    return CaseRow(
        case_id=case_id,
        iteration=1,
        question=f"question of {case_id}" if p is None else f"qeustion of {p.of}",
        answer=f"answer to {case_id}",
        status="ok",
        results=[res(ROUGE, rouge), res(BLEU, bleu)],
        perturbation=p,
    )


def pert(of: str, name: str, expect_flip: bool = False) -> Perturbation:
    return Perturbation(
        of=of,
        kind=name,
        name=name,
        intensity=0.1,
        seed=7,
        original_question=f"question of {of}",
        expect_flip=expect_flip,
    )


# originals: c1 and c2 pass, c3 and c4 fail
ORIGINAL = {"c1": 0.9, "c2": 0.8, "c3": 0.2, "c4": 0.1}
# typos: c1 pass -> fail (broken), c2 holds, c3 fail -> pass (fixed), c4 holds
TYPOS = {"c1": 0.3, "c2": 0.85, "c3": 0.7, "c4": 0.1}
# antonym: c1 still passes (broken), c2 fails as it must (held), c3/c4 failed: not compared
ANTONYM = {"c1": 0.9, "c2": 0.1, "c3": 0.1, "c4": 0.1}


def data(typos: dict[str, float] = TYPOS, run_id: str = "cur") -> ReportData:
    rows = [row(c, s) for c, s in ORIGINAL.items()]
    perturbed = [row(f"{c}~typos", s, pert(c, "typos")) for c, s in typos.items()]
    perturbed += [
        row(f"{c}~antonym", s, pert(c, "antonym", expect_flip=True)) for c, s in ANTONYM.items()
    ]
    d = ReportData(
        run_id=run_id,
        target="t",
        target_kind="lambdaArn",
        suite="test-suites/s.csv",
        started_at="2026-11-22T10:00:00+00:00",
        finished_at="2026-11-22T10:05:00+00:00",
        iterations=1,
        config={},
        metrics=[ROUGE, BLEU],
        stats=compute_stats(rows, [ROUGE, BLEU], 1),
        rows=rows,
        perturbed_rows=perturbed,
    )
    return d.model_copy(update={"robustness": analyse(d)})


def test_flips_and_robustness_score_per_perturbation() -> None:
    typos, _ = data().robustness
    assert (typos.name, typos.kind, typos.intensity, typos.seed) == ("typos", "typos", 0.1, 7)
    assert typos.broken_cases == ["c1"] and typos.fixed_cases == ["c3"]
    assert typos.held_cases == ["c2", "c4"]
    assert (typos.cases, typos.compared, typos.held, typos.score) == (4, 4, 2, 0.5)
    flips = [(f.case_id, f.perturbed_case_id, f.metric, f.before, f.after) for f in typos.flips]
    assert flips == [
        ("c1", "c1~typos", "ROUGE-L", True, False),
        ("c3", "c3~typos", "ROUGE-L", False, True),
    ]
    assert typos.flips[0].before_score == 0.9 and typos.flips[0].after_score == 0.3
    rouge = typos.metrics[0]
    assert (rouge.metric, rouge.compared, rouge.held, rouge.pass_to_fail, rouge.fail_to_pass) == (
        "ROUGE-L",
        4,
        2,
        1,
        1,
    )
    assert rouge.delta == pytest.approx((0.3 + 0.85 + 0.7 + 0.1 - 2.0) / 4)
    assert rouge.ci_low is not None and rouge.ci_high is not None
    assert rouge.ci_low <= rouge.delta <= rouge.ci_high
    bleu = typos.metrics[1]  # every metric, not only the primary ones
    assert (bleu.held, bleu.pass_to_fail, bleu.delta) == (4, 0, 0.0)


def test_antonym_must_flip_and_the_same_verdict_is_the_failure() -> None:
    antonym = data().robustness[1]
    assert antonym.expect_flip
    assert antonym.held_cases == ["c2"] and antonym.broken_cases == ["c1"]
    assert (antonym.compared, antonym.score) == (2, 0.5)
    (problem,) = [p for p in robustness_problems(data()) if "reversed" in p.description]
    assert problem.affected_cases == ["c1"]
    assert "1 of 2 passing cases still pass when the question's meaning is reversed" in (
        problem.description
    )


def test_a_robustness_problem_names_the_flipped_cases_and_metric() -> None:
    problems = find_problems(data())
    typos = next(p for p in problems if p.type == "robustness" and "typos" in p.description)
    assert typos.affected_cases == ["c1"]
    assert typos.metric == "ROUGE-L"
    assert typos.severity == "high"  # 1 of 4 compared broke: 25% >= 20%
    assert "1 of 4 cases fail a primary metric" in typos.description
    assert "robustness 0.50" in typos.description
    assert "1 failing case(s) pass when perturbed" in typos.description
    assert "misspellings" in typos.suggested_action


def test_no_flip_no_problem() -> None:
    steady = data(typos=ORIGINAL)
    assert steady.robustness[0].score == 1.0
    assert [p.description for p in robustness_problems(steady) if "typos" in p.description] == []


def test_summary_entry() -> None:
    s = RobustnessSummary.of(data().robustness[0])
    assert (s.name, s.compared, s.held, s.broken, s.fixed, s.score) == ("typos", 4, 2, 1, 1, 0.5)
    assert s.pass_to_fail == {"ROUGE-L": 1}


def test_a_robustness_drop_against_the_baseline_is_a_regression() -> None:
    base = data(typos=ORIGINAL, run_id="base")  # every verdict held under typos
    cur = data()  # c1 broke
    (change, _) = compare_robustness(cur.robustness, base.robustness)
    assert (change.name, change.baseline_score, change.current_score) == ("typos", 1.0, 0.5)
    assert change.newly_broken == ["c1"] and change.worse
    reg = compare(cur, base)
    assert reg.verdict == "regression"
    assert any(r.startswith("robustness under typos fell from 1.00 to 0.50") for r in reg.reasons)
    assert RegressionVerdict.of(reg).worse_robustness == ["typos"]
    cur = cur.model_copy(update={"regression": reg})
    problem = next(p for p in find_problems(cur) if p.type == "regression")
    assert "c1" in problem.affected_cases


def test_the_same_robustness_is_no_regression() -> None:
    reg = compare(data(), data(run_id="base"))
    assert reg.verdict == "no significant change"
    assert [c.worse for c in reg.robustness] == [False, False]


def test_details_rows_carry_the_perturbation_columns() -> None:
    d = data()
    header, body = detail_table(d.rows + d.perturbed_rows, d.metrics)
    at = header.index(PERTURBATION_COLUMNS[0])
    assert header[at : at + len(PERTURBATION_COLUMNS)] == list(PERTURBATION_COLUMNS)
    original = dict(zip(header, body[0], strict=True))
    assert original["perturbation_of"] == "" and original["original_question"] == ""
    perturbed = dict(zip(header, body[4], strict=True))
    assert perturbed["case_id"] == "c1~typos"
    assert (perturbed["perturbation_of"], perturbed["perturbation"]) == ("c1", "typos")
    assert (perturbed["intensity"], perturbed["seed"]) == ("0.1000", "7")
    assert perturbed["original_question"] == "question of c1"
    assert perturbed["question"] == "qeustion of c1"
    plain_header, _ = detail_table(d.rows, d.metrics)  # a run without perturbations: as before
    assert PERTURBATION_COLUMNS[0] not in plain_header


def test_report_section_shows_both_questions_both_answers_and_the_flipped_metric() -> None:
    html = render_report(data())
    assert 'id="robustness"' in html and 'href="#robustness"' in html
    section = html[html.index('id="robustness"') : html.index('id="distributions"')]
    for text in (
        "question of c1",
        "qeustion of c1",
        "answer to c1",
        "answer to c1~typos",
        "ROUGE-L",
        "c1~typos",
        "must change the answer",
    ):
        assert text in section, text
    d = data()
    d = d.model_copy(update={"perturbed_rows": [], "robustness": []})
    assert 'id="robustness"' not in render_report(d)


CHECK = MetricInfo(
    metric="Misinformation handled",
    evaluator="Misinformation handled",
    primary=True,
    threshold=0.5,
    higher_is_better=True,
)


def test_misinformation_is_decided_by_its_check_on_the_perturbed_copy() -> None:
    """held: the check passed; broken: it failed; a failed rewrite is not compared; the
    correctness flip (the context now says otherwise) is listed but decides nothing."""
    rows = [row(c, 0.9) for c in ("c1", "c2", "c3")]

    def misinformed(of: str, handled: float | None, error: str | None = None) -> CaseRow:
        p = Perturbation(
            of=of,
            kind="misinformation",
            name="misinformation",
            seed=0,
            original_question=f"question of {of}",
            false_fact="Staff get 30 days.",
            chunk=1,
            check="Misinformation handled",
            error=error,
        )
        r = row(f"{of}~misinformation", 0.1, p)  # correctness flips on every case
        if handled is not None:
            r.results.append(res(CHECK, handled))
        else:
            r.status = "target_error"
            r.results = [
                MetricResult(
                    evaluator=CHECK.evaluator,
                    metric=CHECK.metric,
                    status="error",
                    threshold=0.5,
                    reason="not scored",
                )
            ]
        return r

    perturbed = [
        misinformed("c1", 1.0),
        misinformed("c2", 0.0),
        misinformed("c3", None, error="the judge could not rewrite contexts[0]: down"),
    ]
    d = ReportData(
        run_id="cur",
        target="t",
        target_kind="openai",
        suite="test-suites/s.csv",
        started_at="2026-11-22T10:00:00+00:00",
        finished_at="2026-11-22T10:05:00+00:00",
        iterations=1,
        config={},
        metrics=[ROUGE, BLEU, CHECK],
        stats=compute_stats(rows, [ROUGE, BLEU, CHECK], 1),
        rows=rows,
        perturbed_rows=perturbed,
    )
    d = d.model_copy(update={"robustness": analyse(d)})
    (m,) = d.robustness
    assert (m.held_cases, m.broken_cases, m.fixed_cases) == (["c1"], ["c2"], [])
    assert (m.compared, m.score) == (2, 0.5)
    assert {f.metric for f in m.flips} == {"ROUGE-L"}  # listed, not deciding
    (problem,) = robustness_problems(d)
    assert problem.affected_cases == ["c2"] and problem.metric == "Misinformation handled"
    assert "1 of 2 cases contradicted their context without saying so" in problem.description
