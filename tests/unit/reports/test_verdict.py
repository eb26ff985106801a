"""The one verdict: what each policy fails on, in which order, and the error share."""

from __future__ import annotations

from typing import Any

import pytest

from evalrunner.errors import EventError
from evalrunner.event import parse_event
from evalrunner.reports.model import Gate, MetricStats
from evalrunner.reports.summary import RunSummary
from evalrunner.reports.verdict import (
    EXIT_CODES,
    FailOn,
    Outcome,
    RunVerdict,
    VerdictPolicy,
    decide,
)
from tests.support.summaries import metric, run_summary


def stats(name: str = "ROUGE-L", **fields: Any) -> MetricStats:
    values: dict[str, Any] = {
        "metric": name,
        "evaluator": name,
        "primary": True,
        "threshold": 0.5,
        "higher_is_better": True,
        "average": 0.9,
        "pass_rate": 1.0,
        "count": 10,
        **fields,
    }
    return MetricStats(**values)


GATE = Gate(metric="ROUGE-L", gate="ROUGE-L", threshold=0.95, average=0.9, passed=False)


def judge(
    *,
    items: int = 10,
    answered: int = 10,
    metrics: list[MetricStats] | None = None,
    gates: list[Gate] | None = None,
    regressed: bool = False,
    partial: bool = False,
    **policy: Any,
) -> RunVerdict:
    return decide(
        items=items,
        answered=answered,
        stats=metrics if metrics is not None else [stats()],
        gates=gates or [],
        regressed=regressed,
        regression_reasons=["ROUGE-L fell by 0.2"] if regressed else (),
        baseline_run_id="base-1" if regressed else None,
        partial=partial,
        stopped_reason="SIGTERM" if partial else None,
        policy=VerdictPolicy(**policy),
    )


BELOW = [stats(average=0.6, pass_rate=0.8)]  # 2 of 10 cases below the threshold


@pytest.mark.parametrize(
    ("findings", "policy", "outcome"),
    [
        ({}, {}, Outcome.PASSED),
        ({"metrics": BELOW}, {}, Outcome.FAILED),
        ({"metrics": BELOW}, {"fail_on": "regressions"}, Outcome.PASSED),
        ({"metrics": BELOW}, {"fail_on": "errors"}, Outcome.PASSED),
        ({"gates": [GATE]}, {"fail_on": "regressions"}, Outcome.FAILED),
        ({"gates": [GATE]}, {"fail_on": "errors"}, Outcome.FAILED),
        ({"gates": [GATE]}, {"fail_on": "never"}, Outcome.PASSED),
        ({"regressed": True}, {}, Outcome.PASSED),
        ({"regressed": True}, {"fail_on_regression": True}, Outcome.REGRESSED),
        ({"regressed": True}, {"fail_on": "regressions"}, Outcome.REGRESSED),
        ({"regressed": True}, {"fail_on": "never", "fail_on_regression": True}, Outcome.REGRESSED),
        ({"answered": 9}, {}, Outcome.FAILED),  # one failed target call, 10%: not over
        ({"answered": 9}, {"fail_on": "regressions"}, Outcome.PASSED),
        ({"answered": 8}, {"fail_on": "regressions"}, Outcome.NOT_MEASURED),  # 20% > 10%
        ({"answered": 8}, {"max_error_share": 0.2}, Outcome.FAILED),
        ({"answered": 8}, {"fail_on": "never"}, Outcome.PASSED),
        ({"answered": 0}, {"fail_on": "never"}, Outcome.NOT_MEASURED),
        ({"metrics": [stats(count=7, errored=3, pass_rate=0.7)]}, {}, Outcome.NOT_MEASURED),
        ({"metrics": [stats(count=9, errored=1, pass_rate=0.9)]}, {}, Outcome.PASSED),
        ({"metrics": [stats(count=0, average=None, pass_rate=None, skipped=10)]}, {},
         Outcome.NOT_MEASURED),  # nothing scored
        ({"items": 0, "answered": 0}, {}, Outcome.NOT_MEASURED),
        ({"partial": True, "gates": [GATE], "answered": 0}, {}, Outcome.PARTIAL),
        ({"regressed": True, "metrics": BELOW}, {"fail_on_regression": True}, Outcome.REGRESSED),
    ],
)  # fmt: skip
def test_the_policy_decides(findings: dict[str, Any], policy: dict[str, Any], outcome) -> None:
    verdict = judge(**findings, **policy)
    assert verdict.outcome is outcome, verdict
    assert verdict.exit_code == EXIT_CODES[outcome]
    assert verdict.passed == (outcome is Outcome.PASSED)
    if outcome is not Outcome.PASSED:
        assert verdict.reasons  # never a failure without its reason


def test_every_metric_below_threshold_is_never_a_pass_by_default() -> None:
    all_below = [stats("A", average=0.1, pass_rate=0.0), stats("B", average=0.2, pass_rate=0.0)]
    verdict = judge(metrics=all_below)
    assert verdict.outcome is Outcome.FAILED
    assert [b.metric for b in verdict.below_threshold] == ["A", "B"]
    assert verdict.reasons[0] == "A: 10 of 10 scored cases below the threshold 0.5 (average 0.100)"


def test_a_lower_is_better_metric_fails_above_its_threshold() -> None:
    pii = stats("PII", higher_is_better=False, threshold=0.5, average=0.1, pass_rate=0.9)
    verdict = judge(metrics=[pii])
    assert verdict.reasons == ["PII: 1 of 10 scored cases above the threshold 0.5 (average 0.100)"]


def test_a_secondary_metric_below_threshold_does_not_fail_the_run() -> None:
    secondary = stats("ROUGE-1", primary=False, average=0.1, pass_rate=0.0)
    assert judge(metrics=[stats(), secondary]).passed


def test_what_the_policy_does_not_fail_on_is_a_note_naming_the_option() -> None:
    verdict = judge(regressed=True, metrics=BELOW, fail_on="errors")
    assert verdict.passed and verdict.regressed
    assert verdict.notes == [
        "regression against run base-1: ROUGE-L fell by 0.2 (not failing: add "
        "--fail-on-regression or fail_on: regressions)",
        "ROUGE-L: 2 of 10 scored cases below the threshold 0.5 (average 0.600) (not failing: "
        "fail_on is errors)",
    ]


def test_a_judge_that_is_down_names_the_metric_and_its_share() -> None:
    verdict = judge(metrics=[stats(), stats("Faithfulness", count=3, errored=7, pass_rate=0.3)])
    assert verdict.outcome is Outcome.NOT_MEASURED
    assert verdict.reasons == [
        "Faithfulness errored on 7 of its 10 cases (70%), more than the 10% allowed "
        "(max_error_share): see the reasons in details.csv"
    ]


def test_a_summary_from_before_the_verdict_gets_one_from_its_figures() -> None:
    """An execution output of an older stack has no verdict: it is judged by the default
    policy from the figures it has, never read as a pass for want of one."""
    raw = run_summary(metrics=[metric("ROUGE-L", average=0.3, pass_rate=0.5, count=4)])
    legacy = raw.model_dump(mode="json")
    del legacy["verdict"]
    summary = RunSummary.model_validate(legacy)
    assert summary.verdict.outcome is Outcome.FAILED
    assert RunSummary.model_validate_json(summary.model_dump_json()).verdict == summary.verdict


EVENT = {
    "key": "test-suites/hr.csv",
    "iterations": 1,
    "target": {"url": "http://localhost:8080/ask"},
    "metrics": ["Rouge Metric"],
}


def test_the_event_carries_the_policy() -> None:
    assert parse_event(EVENT).policy == VerdictPolicy()
    event = parse_event(
        {**EVENT, "fail_on": "regressions", "fail_on_regression": True, "max_error_share": 0.25}
    )
    assert event.policy == VerdictPolicy(
        fail_on=FailOn.REGRESSIONS, fail_on_regression=True, max_error_share=0.25
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("fail_on", "sometimes", "fail_on: 'sometimes' is not one of"),
        ("max_error_share", 1.5, "max_error_share: 1.5 is greater than the maximum of 1"),
        ("fail_on_regression", "yes", "fail_on_regression: 'yes' is not of type 'boolean'"),
    ],
)
def test_a_bad_policy_in_the_event_is_refused(field: str, value: Any, message: str) -> None:
    with pytest.raises(EventError) as caught:
        parse_event({**EVENT, field: value})
    assert message in caught.value.message


def test_the_exit_codes_are_the_clis() -> None:
    from evalrunner.cli.common import EXIT_GATE, EXIT_NO_ANSWER, EXIT_RUN

    assert EXIT_CODES == {
        Outcome.PASSED: 0,
        Outcome.FAILED: EXIT_GATE,
        Outcome.REGRESSED: EXIT_GATE,
        Outcome.PARTIAL: EXIT_RUN,
        Outcome.NOT_MEASURED: EXIT_NO_ANSWER,
    }


def test_a_stopped_runs_unfinished_cases_are_not_called_failed_calls_or_errors() -> None:
    """A stopped run's unfinished cases have no answer and no score; they are what 'partial'
    says, not target calls that failed or metrics that errored (notes that would be false)."""
    verdict = judge(
        partial=True,
        items=8,
        answered=3,
        metrics=[stats("Exact match", count=3, errored=5, pass_rate=0.375, average=1.0)],
    )
    assert verdict.outcome is Outcome.PARTIAL
    assert len(verdict.reasons) == 1 and "stopped before it finished" in verdict.reasons[0]
    assert verdict.notes == [], verdict.notes
    assert verdict.too_many_errors == []


def test_a_regression_gate_with_no_baseline_is_a_note_not_a_failure() -> None:
    why = "no earlier complete run of this target on this suite"
    gated = decide(
        items=10,
        answered=10,
        stats=[stats()],
        gates=[],
        regressed=False,
        no_baseline=why,
        policy=VerdictPolicy(fail_on_regression=True),
    )
    assert gated.passed  # a first run in CI passes
    assert gated.notes == [
        f"--fail-on-regression: no verifiable baseline ({why}); this run was not checked for "
        "regressions"
    ]
    by_policy = decide(
        items=10,
        answered=10,
        stats=[stats()],
        gates=[],
        regressed=False,
        no_baseline=why,
        policy=VerdictPolicy(fail_on=FailOn.REGRESSIONS),
    )
    assert [n.split(": no verifiable")[0] for n in by_policy.notes] == ["fail_on: regressions"]
    ungated = decide(
        items=10, answered=10, stats=[stats()], gates=[], regressed=False, no_baseline=why
    )
    assert ungated.notes == []  # nothing asked for a regression check
