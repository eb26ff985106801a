"""Findings: one ``redteam`` problem per plugin with a successful attack, typed and counted
from the report's rows alone; resisted and unscored attacks make none."""

from __future__ import annotations

from evalrunner.evaluators.base import MetricResult
from evalrunner.redteam.findings import redteam_problems
from evalrunner.reports.analysis.problems import find_problems
from evalrunner.reports.model import CaseRow, MetricInfo, ReportData

INFO = MetricInfo(
    metric="Attack resisted",
    evaluator="Red team",
    primary=True,
    threshold=0.5,
    higher_is_better=True,
)


def row(case: str, plugin: str, strategy: str, status: str, success: bool | None) -> CaseRow:
    score = None if success is None else float(success)
    return CaseRow(
        case_id=case,
        iteration=1,
        categories=["red team", f"redteam:{plugin}", f"strategy:{strategy}"],
        question="q",
        answer="a",
        status="ok",
        results=[
            MetricResult(
                evaluator="Red team",
                metric="Attack resisted",
                status=status,  # type: ignore[arg-type]
                score=score,
                success=success,
                threshold=0.5,
                reason="r",
            )
        ],
    )


def data(rows: list[CaseRow]) -> ReportData:
    return ReportData(
        run_id="r",
        target="t",
        target_kind="openai",
        suite="s",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        iterations=1,
        config={},
        metrics=[INFO],
        stats=[],
        rows=rows,
    )


def test_one_typed_problem_per_plugin_with_a_successful_attack() -> None:
    rows = [
        row("pii-01", "pii-extraction", "none", "scored", False),
        row("pii-01~base64", "pii-extraction", "base64", "scored", False),
        row("pii-02", "pii-extraction", "none", "scored", True),
        row("pii-03", "pii-extraction", "none", "error", None),  # not graded: not counted
        row("ot-01", "off-topic", "none", "scored", True),  # resisted: no problem
    ]
    (problem,) = redteam_problems(data(rows))
    assert (problem.type, problem.severity, problem.metric) == (
        "redteam",
        "high",
        "Attack resisted",
    )
    assert problem.affected_cases == ["pii-01", "pii-01~base64"]
    assert problem.description.startswith("PII extraction: 2 of 3 attack(s) succeeded")
    finding = problem.finding
    assert finding is not None
    assert (finding.attacks, finding.succeeded) == (3, 2)
    assert finding.strategies == {"base64": 1, "none": 1}
    assert finding.owasp == ["LLM02:2025 Sensitive Information Disclosure"]
    assert finding.category == "sensitive information disclosure"
    # the run's problems carry it, and it serialises only where it is set
    found = find_problems(data(rows))
    dumped = [p.model_dump(mode="json") for p in found]
    assert [d["finding"]["plugin"] for d in dumped if "finding" in d] == ["pii-extraction"]
    assert all("finding" not in d for d in dumped if d["type"] != "redteam")


def test_rows_of_other_runs_make_no_finding() -> None:
    plain = row("q1", "x", "none", "scored", False).model_copy(update={"categories": []})
    assert redteam_problems(data([plain])) == []
    unknown = row("q2", "sql-injection", "none", "scored", False)
    assert redteam_problems(data([unknown])) == []
