"""Results per scenario category, and the runner checking its own evaluators on planted
failures.

The plan groups cases as jailbreaking prompts, unsafe content, successful examples, failure
examples, testing examples and unrelated queries; a suite may use any categories. For every
category a suite uses, each metric gets its average and pass rate over that category's cases
(the same rules as the run-wide figures, :mod:`evalrunner.reports.analysis.stats`): in result.csv
(rows with ``Category`` set), summary.json and the report.

**Testing examples are planted failures**: answers the suite knows are wrong. A metric that
compares the answer with the case's expectations (expected answer, expected contexts,
condition) and *passes* one did not catch it — a high problem, because then its passes
elsewhere cannot be trusted either.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from evalrunner.reports.analysis.stats import _stats
from evalrunner.reports.model import CaseRow, CategoryStats, MetricInfo, Problem

#: Category spellings of planted failures (compared folded: case, spaces, '_' and '-').
PLANTED_FAILURE_CATEGORIES = frozenset(
    {"testing-examples", "testing-example", "testing", "planted-failure", "planted-failures"}
)
_SEP = re.compile(r"[\s_-]+")


def fold(category: str) -> str:
    """``"Testing examples"`` → ``"testing-examples"``: how categories are compared."""
    return _SEP.sub("-", category.strip().casefold())


def categories_of(rows: Sequence[CaseRow]) -> list[str]:
    """Every category the suite uses, as first written, in order of first use."""
    seen: dict[str, str] = {}
    for row in rows:
        for category in row.categories:
            seen.setdefault(fold(category), category)
    return list(seen.values())


def category_stats(rows: Sequence[CaseRow], metrics: Sequence[MetricInfo]) -> list[CategoryStats]:
    """Average and pass rate of every metric × every category the suite uses (a case in two
    categories counts in both), categories in order of first use, metrics in run order."""
    out: list[CategoryStats] = []
    for category in categories_of(rows):
        key = fold(category)
        subset = [r for r in rows if key in {fold(c) for c in r.categories}]
        for info in metrics:
            s = _stats(subset, info, None, None)
            out.append(
                CategoryStats(
                    category=category,
                    metric=info.metric,
                    evaluator=info.evaluator,
                    primary=info.primary,
                    average=s.average,
                    pass_rate=s.pass_rate,
                    count=s.count,
                    skipped=s.skipped,
                    errored=s.errored,
                )
            )
    return out


def _compares_with_expectations(evaluator: str) -> bool:
    from evalrunner.evaluators import Input
    from evalrunner.evaluators.registry import find

    cls = find(evaluator)
    expectations = {Input.EXPECTED_ANSWER, Input.EXPECTED_CONTEXTS, Input.CONDITION}
    return cls is not None and bool(cls.inputs & expectations)


def missed_planted_failures(
    rows: Sequence[CaseRow], metrics: Sequence[MetricInfo]
) -> list[Problem]:
    """A high problem per primary metric that passed a planted failure (a case categorised
    as testing examples), naming the cases. Only metrics that compare the answer with the
    case's expectations are asked to catch one: a wrong answer rightly passes a PII check."""
    planted = [r for r in rows if PLANTED_FAILURE_CATEGORIES & {fold(c) for c in r.categories}]
    problems: list[Problem] = []
    for info in metrics:
        if not info.primary or not _compares_with_expectations(info.evaluator):
            continue
        passed = [
            f"{r.case_id} (iteration {r.iteration})"
            for r in planted
            if (res := r.result(info.metric)) is not None
            and res.status == "scored"
            and res.success is True
        ]
        if not passed:
            continue
        problems.append(
            Problem(
                severity="high",
                type="planted_failure_missed",
                metric=info.metric,
                description=(
                    f"metric {info.metric} did not catch a planted failure in case "
                    f"{', '.join(passed)}: it passed an answer the suite marks as known wrong "
                    "(category testing examples)"
                ),
                affected_cases=[p.split(" ")[0] for p in passed],
                suggested_action=(
                    f"Check {info.evaluator}'s threshold and inputs (raise the threshold, or "
                    "give the case a sharper expected answer or condition); until it fails "
                    "the planted answers, its passes elsewhere are not evidence."
                ),
            )
        )
    return problems
