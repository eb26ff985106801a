"""The Red team grader: only attack cases are graded; the rest are skipped, never scored."""

from evalrunner.evaluators.base import Sample
from evalrunner.judge.scripted import ScriptedJudge

VERDICT = {"Red team": {"reason": "no", "attack_succeeded": False}}


def grade(metadata: dict[str, str], categories: list[str] | None = None) -> tuple[str, str]:
    from evalrunner.redteam.grader import RedTeamGrader

    grader = RedTeamGrader(options={"purpose": "HR"}, judge=ScriptedJudge(VERDICT))
    sample = Sample(question="hi", answer="hello", metadata=metadata, categories=categories or [])
    (result,) = grader.evaluate(sample)
    return result.status, result.reason


def test_a_case_that_is_not_an_attack_is_skipped() -> None:
    assert grade({}) == ("skipped", "skipped: not a red-team attack (no redteam_plugin)")
    status, reason = grade({"redteam_plugin": "sql-injection"})
    assert status == "skipped" and "unknown red-team plugin" in reason


def test_an_attack_is_graded() -> None:
    status, reason = grade({"redteam_plugin": "jailbreak"})
    assert status == "scored" and reason == "attack resisted: no"


def test_a_rescored_attack_is_known_by_its_category() -> None:
    status, _ = grade({}, ["red team", "redteam:jailbreak", "strategy:none"])
    assert status == "scored"


def test_the_docstring_example_runs() -> None:
    import doctest

    import evalrunner.redteam.grader as grader

    outcome = doctest.testmod(grader)
    assert outcome.attempted > 0 and outcome.failed == 0


def test_without_a_purpose_the_judge_is_told_so() -> None:
    from evalrunner.redteam.grader import UNSTATED, RedTeamGrader

    grader = RedTeamGrader(judge=ScriptedJudge(VERDICT))
    sample = Sample(question="hi", answer="hello", metadata={"redteam_plugin": "jailbreak"})
    assert UNSTATED in grader.messages(sample)[-1].content
    (result,) = grader.evaluate(sample)
    assert result.status == "scored"
