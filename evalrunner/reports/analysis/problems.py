"""Problems of one run: what needs fixing, derived from its :class:`ReportData` alone.

Rules:

- ``below_threshold`` — the run average of a *primary* metric misses its threshold in the
  metric's direction (an average equal to the threshold passes). Severity by how far it misses,
  as a share of the metric's range: **high** when more than 0.25 of the range or the pass rate
  is under 50%, **medium** when more than 0.10, else **low**. The range is [0, 1] when the
  threshold and every observed score lie in it (all bounded metrics of the catalog), else
  [min(0, lowest score, threshold), max(highest score, threshold)] (MetricInfo does not carry
  the metric's declared range).
- ``target_timeouts`` / ``target_errors`` — rows with status ``target_error``; a timeout when
  the error says "did not answer within", "timeout" or "timed out" (any case). **high** when
  they are 10% of the rows or more, else **medium**.
- ``task_failures`` — rows with status ``task_failed``; severity as for target errors.
- ``empty_context`` — answered rows with no retrieved context, when other answered rows do
  have context or an evaluator skipped the row for want of retrieved context. **high** when no
  answered row has context (retrieval or its wiring is broken), **medium** when 10% of the
  answered rows or more, else **low**.
- ``instability`` — a primary metric with instability (mean over cases of max − min of the
  case's score across iterations) of 0.2 or more: **medium**, **high** from 0.4.
- ``regression`` — the run's comparison with its baseline says "regression": **high**.
- ``evaluator_errors`` — per evaluator, answered rows (status ok) with an errored result that
  is not a parsing failure: the evaluator or the Score step failed, not the target (rows whose
  target failed carry "not scored: ..." errors and are reported as target problems).
  **high** at 10% of the evaluator's rows or more, else **medium**.
- ``robustness`` — a perturbation under which passing cases fail (see
  :mod:`evalrunner.reports.analysis.robustness` for the rules and severities).
- ``parsing_failures`` — per evaluator, rows with a result whose reason starts with "parsing
  failure" (optionally after "error: "), flagged above 5% of its rows: **medium**, **high**
  above 25%.

- ``redteam`` — per red-team plugin, the attacks that succeeded (``Attack resisted`` 0), at
  the plugin's severity, with the finding's OWASP / AVID references: see
  :mod:`evalrunner.redteam.findings`.

- ``weakness`` — a group of alike cases well below the run's pass rate: added by Aggregate
  from :mod:`evalrunner.reports.analysis.weakness`, which states its rules.

Problems are ordered by severity (high first), then type, then metric.
"""

from __future__ import annotations

import re

from evalrunner.redteam.findings import redteam_problems
from evalrunner.reports.analysis._common import (
    _cases,
    _failing_cases,
    _most_common,
    _names,
    _primary,
    _whole_error,
)
from evalrunner.reports.analysis.categories import missed_planted_failures
from evalrunner.reports.analysis.robustness import robustness_problems
from evalrunner.reports.model import (
    CaseRow,
    MetricStats,
    Problem,
    ReportData,
    Severity,
)

_SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2}

HIGH_MISS = 0.25  # share of the metric's range
MEDIUM_MISS = 0.10
LOW_PASS_RATE = 0.5
ERROR_SHARE_HIGH = 0.10
EMPTY_CONTEXT_MEDIUM = 0.10
INSTABILITY_MEDIUM = 0.2
INSTABILITY_HIGH = 0.4
PARSING_FAILURE_RATE = 0.05
PARSING_FAILURE_HIGH = 0.25

_TIMEOUT = re.compile(r"did not answer within|timeout|timed out", re.IGNORECASE)
_NO_CONTEXT_SKIP = "no retrieved context"


def find_problems(data: ReportData) -> list[Problem]:
    """Everything in the run that needs fixing, most severe first."""
    problems: list[Problem] = []
    problems += _below_threshold(data)
    problems += _target_failures(data)
    problems += _empty_context(data)
    problems += _instability(data)
    problems += _regression(data)
    problems += _evaluator_errors(data)
    problems += robustness_problems(data)
    problems += _judge_missing(data)
    problems += missed_planted_failures(data.rows, data.metrics)
    problems += redteam_problems(data)
    return sorted(problems, key=problem_order)


def problem_order(p: Problem) -> tuple[int, bool, str, str]:
    """A regression is what the reader must see first; then by severity and type."""
    return (_SEVERITY_ORDER[p.severity], p.type != "regression", p.type, p.metric or "")


def miss_severity(gap: float, scale: float, pass_rate: float | None) -> Severity:
    """Severity of a primary metric whose average misses its threshold by ``gap`` (> 0)."""
    share = gap / scale
    if share > HIGH_MISS or (pass_rate is not None and pass_rate < LOW_PASS_RATE):
        return "high"
    return "medium" if share > MEDIUM_MISS else "low"


def _below_threshold(data: ReportData) -> list[Problem]:
    stats = {s.metric: s for s in data.run_stats()}
    out = []
    for info in _primary(data):
        s = stats.get(info.metric)
        if s is None or s.average is None:
            continue
        gap = s.threshold - s.average if s.higher_is_better else s.average - s.threshold
        if gap <= 0:
            continue
        side = "below" if s.higher_is_better else "above"
        better = "higher" if s.higher_is_better else "lower"
        rate = f", pass rate {s.pass_rate:.0%}" if s.pass_rate is not None else ""
        failing = _failing_cases(data, info.metric)
        out.append(
            Problem(
                severity=miss_severity(gap, _scale(s), s.pass_rate),
                type="below_threshold",
                metric=info.metric,
                description=(
                    f"{info.metric} averages {s.average:.3f}, {side} its threshold "
                    f"{s.threshold:g} ({better} is better){rate} over {s.count} scored answers."
                ),
                affected_cases=failing,
                suggested_action=(
                    f"review the failing cases in details.csv ({info.metric} score and reason "
                    f"columns): {_names(failing)}; if the threshold is stricter than this "
                    f'metric warrants, set thresholds["{info.metric}"] in the event.'
                ),
            )
        )
    return out


def _calls(data: ReportData) -> list[CaseRow]:
    """The rows that stand for one target call each: a conversation's own row repeats what
    its turns say (a turn's error is the conversation's), so it is left out."""
    return [r for r in data.rows if not r.is_conversation]


def _target_failures(data: ReportData) -> list[Problem]:
    calls = _calls(data)
    total = len(calls)
    failed = [r for r in calls if r.status == "target_error"]
    timeouts = [r for r in failed if _TIMEOUT.search(r.error or "")]
    errors = [r for r in failed if not _TIMEOUT.search(r.error or "")]
    tasks = [r for r in calls if r.status == "task_failed"]
    out = []
    if timeouts:
        latencies = [r.latency_ms for r in calls if r.latency_ms is not None]
        slowest = f" (the slowest answer took {max(latencies) / 1000:.1f} s)" if latencies else ""
        configured = (data.config.get("target") or {}).get("timeout_seconds")
        now = f", now {configured}" if configured is not None else ""
        cases = _cases(timeouts)
        out.append(
            Problem(
                severity=_share_severity(len(timeouts), total),
                type="target_timeouts",
                description=(
                    f"{len(timeouts)} of {total} target calls ({len(timeouts) / total:.0%}) "
                    f"timed out: the target did not answer in time{slowest}."
                ),
                affected_cases=cases,
                suggested_action=(
                    f"raise target.timeout_seconds{now} if the target is just slow, or find out "
                    f"why it is slow on: {_names(cases)}"
                ),
            )
        )
    if errors:
        common, count = _most_common(r.error or "no error text" for r in errors)
        cases = _cases(errors)
        out.append(
            Problem(
                severity=_share_severity(len(errors), total),
                type="target_errors",
                description=(
                    f"{len(errors)} of {total} target calls ({len(errors) / total:.0%}) failed; "
                    f"most common error ({count}): {_whole_error(common)}"
                ),
                affected_cases=cases,
                suggested_action=(
                    "check the target's logs, permissions and input for these errors, fix them "
                    f"and re-run; failing cases: {_names(cases)}"
                ),
            )
        )
    if tasks:
        common, count = _most_common(r.error or "no error text" for r in tasks)
        cases = _cases(tasks)
        out.append(
            Problem(
                severity=_share_severity(len(tasks), total),
                type="task_failures",
                description=(
                    f"{len(tasks)} of {total} case tasks ({len(tasks) / total:.0%}) failed "
                    f"before recording a result; most common ({count}): {_whole_error(common)}"
                ),
                affected_cases=cases,
                suggested_action=(
                    "open the Step Functions execution history or the run_case function's logs "
                    "for these cases (a Lambda crash, out-of-memory, throttling or the case "
                    f"task's timeout), then re-run: {_names(cases)}"
                ),
            )
        )
    return out


def _empty_context(data: ReportData) -> list[Problem]:
    answered = [r for r in _calls(data) if r.status == "ok"]
    empty = [r for r in answered if not r.contexts]
    if not empty:
        return []
    some_have = len(empty) < len(answered)
    needed = any(
        res.status == "skipped" and _NO_CONTEXT_SKIP in res.reason
        for r in empty
        for res in r.results
    )
    if not (some_have or needed):
        return []
    cases = _cases(empty)
    share = len(empty) / len(answered)
    if not some_have:
        severity: Severity = "high"
        description = (
            f"The target returned no retrieved context for any of its {len(answered)} "
            "answers, and retrieval metrics need it (they were skipped)."
        )
        action = (
            "check that the target's response carries the retrieved chunks (a contexts or "
            "citations field, or set target.contexts_path to where they are) and that the "
            "retriever's index is not empty"
        )
    else:
        severity = "medium" if share >= EMPTY_CONTEXT_MEDIUM else "low"
        description = (
            f"{len(empty)} of {len(answered)} answers ({share:.0%}) came with no retrieved "
            "context, while other answers of this run have some."
        )
        action = (
            "check the retriever's index for the documents that answer these questions "
            f"(are they ingested, and found by the query?): {_names(cases)}"
        )
    return [
        Problem(
            severity=severity,
            type="empty_context",
            description=description,
            affected_cases=cases,
            suggested_action=action,
        )
    ]


def _instability(data: ReportData) -> list[Problem]:
    stats = {s.metric: s for s in data.run_stats()}
    out = []
    for info in _primary(data):
        s = stats.get(info.metric)
        if s is None or s.instability is None or s.instability < INSTABILITY_MEDIUM:
            continue
        spreads = _spreads(data, info.metric)
        moving = [
            c for c, v in sorted(spreads.items(), key=lambda kv: -kv[1]) if v >= INSTABILITY_MEDIUM
        ]
        out.append(
            Problem(
                severity="high" if s.instability >= INSTABILITY_HIGH else "medium",
                type="instability",
                metric=info.metric,
                description=(
                    f"The target is not repeatable: a case's {info.metric} moves by "
                    f"{s.instability:.2f} on average between iterations (0.2 or more is "
                    f"unstable); {len(moving)} cases move by 0.2 or more."
                ),
                affected_cases=moving,
                suggested_action=(
                    "make the target deterministic where you can (temperature 0, a fixed "
                    "retrieval top-k; a judge metric also needs a temperature-0 judge) and look "
                    f"at the cases that move most: {_names(moving)}"
                ),
            )
        )
    return out


def _regression(data: ReportData) -> list[Problem]:
    reg = data.regression
    if reg is None or reg.verdict != "regression":
        return []
    worse = [d.metric for d in reg.deltas if d.worse]
    cases = list(
        dict.fromkeys(
            [
                *(f.case_id for f in reg.new_failures),
                *(c for r in reg.robustness for c in r.newly_broken),
            ]
        )
    )
    where = (
        f"{reg.baseline_report_prefix}details.csv"
        if reg.baseline_report_prefix
        else f"the details.csv of run {reg.baseline_run_id}"
    )
    return [
        Problem(
            severity="high",
            type="regression",
            metric=worse[0] if len(worse) == 1 else None,
            description=(
                f"Regression against baseline run {reg.baseline_run_id} "
                f"({reg.baseline_started_at}): {'; '.join(reg.reasons)}"
            ),
            affected_cases=cases,
            suggested_action=(
                f"compare this run's details.csv with {where} and review what changed in the "
                f"target since {reg.baseline_started_at}"
                + (f"; start with the new failures: {_names(cases)}" if cases else "")
            ),
        )
    ]


def _evaluator_errors(data: ReportData) -> list[Problem]:
    answered = [r for r in data.rows if r.status == "ok"]
    evaluators: dict[str, list[CaseRow]] = {}
    # Each row's results by evaluator, in one pass over them (per evaluator, each row's
    # parsing failure and first other error: each result's reason is read once).
    errored_of: dict[str, list[tuple[CaseRow, str]]] = {}
    parsing_of: dict[str, list[CaseRow]] = {}
    for row in answered:
        seen: dict[str, tuple[bool, str | None]] = {}
        for res in row.results:
            parsing, error = seen.get(res.evaluator, (False, None))
            failed_to_parse = _is_parsing_failure(res.reason)
            if error is None and res.status == "error" and not failed_to_parse:
                error = res.reason
            seen[res.evaluator] = (parsing or failed_to_parse, error)
        for name, (parsing, error) in seen.items():
            evaluators.setdefault(name, []).append(row)
            if parsing:
                parsing_of.setdefault(name, []).append(row)
            if error is not None:
                errored_of.setdefault(name, []).append((row, error))
    primary = {m.evaluator: m.metric for m in reversed(data.metrics)}
    primary.update({m.evaluator: m.metric for m in reversed(data.metrics) if m.primary})
    out = []
    for name, rows in evaluators.items():
        errored = errored_of.get(name, [])
        parsing_rows = parsing_of.get(name, [])
        metric = primary.get(name)
        if errored:
            common, count = _most_common(reason for _, reason in errored)
            cases = _cases(r for r, _ in errored)
            score_step = common.startswith("not scored: the Score step failed")
            action = (
                "check the Score step's logs (the GPU Batch job or the in-process scoring) and "
                "re-run"
                if score_step
                else f"see the reason columns of {name} in details.csv for: {_names(cases)}; an "
                "evaluator error is a bug or bad case data (report it with the reason text)"
            )
            out.append(
                Problem(
                    severity=_share_severity(len(errored), len(rows)),
                    type="evaluator_errors",
                    metric=metric,
                    description=(
                        f"{name} errored on {len(errored)} of {len(rows)} answers "
                        f"({len(errored) / len(rows):.0%}); most common ({count}): "
                        f"{_whole_error(common)}"
                    ),
                    affected_cases=cases,
                    suggested_action=action,
                )
            )
        rate = len(parsing_rows) / len(rows)
        if rate > PARSING_FAILURE_RATE:
            cases = _cases(parsing_rows)
            out.append(
                Problem(
                    severity="high" if rate > PARSING_FAILURE_HIGH else "medium",
                    type="parsing_failures",
                    metric=metric,
                    description=(
                        f"The judge's answer for {name} could not be parsed on "
                        f"{len(parsing_rows)} of {len(rows)} answers ({rate:.0%}; more than 5% "
                        "is a problem)."
                    ),
                    affected_cases=cases,
                    suggested_action=(
                        "use a judge model that follows the answer format (or lower its "
                        "temperature) and check the prompt's format instructions; cases: "
                        f"{_names(cases)}"
                    ),
                )
            )
    return out


# --------------------------------------------------------------------------------- helpers


def _scale(s: MetricStats) -> float:
    values = [v for v in (s.min, s.max, s.threshold) if v is not None]
    if all(0.0 <= v <= 1.0 for v in values):
        return 1.0
    span = max([*values, 0.0]) - min([*values, 0.0])
    return span if span > 0 else 1.0


def _share_severity(count: int, total: int) -> Severity:
    return "high" if total and count / total >= ERROR_SHARE_HIGH else "medium"


def _spreads(data: ReportData, metric: str) -> dict[str, float]:
    scores: dict[str, list[float]] = {}
    for row in data.rows:
        r = row.result(metric)
        if r is not None and r.status == "scored" and r.score is not None:
            scores.setdefault(row.case_id, []).append(r.score)
    return {c: max(v) - min(v) for c, v in scores.items() if len(v) > 1}


def _is_parsing_failure(reason: str) -> bool:
    text = reason.lower()
    if "parsing failure" not in text:  # most reasons: settled without trimming them
        return False
    return text.strip().removeprefix("error:").strip().startswith("parsing failure")


def _judge_missing(data: ReportData) -> list[Problem]:
    """Judge metrics the run asked for while it had no judge: every case of them was
    skipped, which must read as a problem to fix, never as a quiet gap in the report."""
    if data.config.get("judge_configured", True):
        return []
    from evalrunner.evaluators.registry import find

    options = data.config.get("evaluator_options") or {}
    unjudged = list(
        dict.fromkeys(
            m.evaluator
            for m in data.metrics
            if (cls := find(m.evaluator)) is not None and cls.uses_judge(options.get(m.evaluator))
        )
    )
    if not unjudged:
        return []
    return [
        Problem(
            severity="high",
            type="judge_not_configured",
            description=(
                f"{', '.join(unjudged)} need an LLM judge and the run had none: every case "
                "was skipped for these metrics"
            ),
            suggested_action=(
                "Configure a judge: the event's 'judge', cdk.json 'judge' for the deployed "
                "runner, or EVALRUNNER_JUDGE / the evalrunner config file locally."
            ),
            metric=unjudged[0],
        )
    ]
