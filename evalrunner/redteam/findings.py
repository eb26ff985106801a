"""Red-team findings: the successful attacks of a run, one ``redteam`` problem per plugin.

Rule: an attack case is a row whose ``Attack resisted`` result was scored (the grader's
metric) and whose categories name its plugin (``redteam:<plugin>``) and strategy
(``strategy:<name>``), as :func:`evalrunner.redteam.plan.suite_rows` writes them. Per plugin
with at least one successful attack (score 0), one problem of type ``redteam``: the plugin's
severity (one successful attack is enough: a red team looks for existence, not rates), the
successful cases, the plugin's suggested action, and a :class:`Finding` with its category,
OWASP Top 10 for LLM Applications (2025) and AVID references, and successes per strategy.
Read by Aggregate from the report's rows alone, so a rescored run finds the same.
"""

from __future__ import annotations

from collections import Counter

from evalrunner.redteam.model import GRADER, METRIC, PLUGIN_PREFIX, STRATEGY_PREFIX
from evalrunner.redteam.plugins import available
from evalrunner.reports.model import CaseRow, Finding, Problem, ReportData

#: The problem type of a finding.
TYPE = "redteam"
#: The problem type of what the red team's plan asked for and did not test.
UNTESTED = "redteam_untested"


def _tagged(row: CaseRow, prefix: str) -> str | None:
    return next((c[len(prefix) :] for c in row.categories if c.startswith(prefix)), None)


def untested_problem(data: ReportData) -> list[Problem]:
    """What the red team asked for and did not test (the grader's ``untested`` option, set
    when its attacks were written): a gate passed over the attacks that ran says nothing of
    a plugin the judge could not write, so the run's problems do."""
    options = data.config.get("evaluator_options")
    grader = options.get(GRADER) if isinstance(options, dict) else None
    lines = grader.get("untested") if isinstance(grader, dict) else None
    if not isinstance(lines, list) or not lines:
        return []
    return [
        Problem(
            severity="high",
            type=UNTESTED,
            metric=METRIC,
            description="Not tested as asked: " + "; ".join(map(str, lines)),
            suggested_action=(
                "run the red team again once the judge answers (a deployed event writes the "
                "missing attacks on its next run; the judge cache answers the rest), or name "
                "fewer plugins or strategies"
            ),
        )
    ]


def redteam_problems(data: ReportData) -> list[Problem]:
    """One problem per plugin whose attacks succeeded at least once (see the module), and
    one for what the red team did not test (:func:`untested_problem`)."""
    return _findings(data) + untested_problem(data)


def _findings(data: ReportData) -> list[Problem]:
    attacks: Counter[str] = Counter()
    broken: dict[str, list[CaseRow]] = {}
    for row in data.rows:
        result = row.result(METRIC)
        tagged = _tagged(row, PLUGIN_PREFIX)
        if result is None or result.status != "scored" or tagged is None:
            continue
        attacks[tagged] += 1
        if result.success is False:
            broken.setdefault(tagged, []).append(row)
    catalog = available()
    problems = []
    for plugin_id, rows in broken.items():
        plugin = catalog.get(plugin_id)
        if plugin is None:  # a plugin of a newer version: still a finding, untyped
            continue
        strategies = Counter(_tagged(r, STRATEGY_PREFIX) or "none" for r in rows)
        count, total = len(rows), attacks[plugin_id]
        via = ", ".join(f"{name} {n}" for name, n in sorted(strategies.items()))
        problems.append(
            Problem(
                severity=plugin.severity,
                type=TYPE,
                metric=METRIC,
                description=(
                    f"{plugin.title}: {count} of {total} attack(s) succeeded ({via}); "
                    f"{', '.join(plugin.owasp)}"
                ),
                affected_cases=list(dict.fromkeys(r.case_id for r in rows)),
                suggested_action=plugin.action,
                finding=Finding(
                    plugin=plugin.id,
                    title=plugin.title,
                    category=plugin.category,
                    owasp=list(plugin.owasp),
                    avid=list(plugin.avid),
                    attacks=total,
                    succeeded=count,
                    strategies=dict(sorted(strategies.items())),
                ),
            )
        )
    return problems
