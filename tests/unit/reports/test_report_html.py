"""report.html and the leaderboard page, read back with BeautifulSoup."""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Any

import pytest
from bs4 import BeautifulSoup, Tag

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.stats import compute_stats
from evalrunner.reports.model import (
    CaseFlip,
    CaseRow,
    DifficultCase,
    Insight,
    Leaderboard,
    LeaderboardEntry,
    MetricDelta,
    MetricInfo,
    Problem,
    Regression,
    ReportData,
)
from evalrunner.reports.verdict import VerdictPolicy, decide
from evalrunner.reports.views.html import (
    HEATMAP_ROWS,
    WORST_CASES,
    render_leaderboard,
    render_report,
)

XSS_SCRIPT = "<script>alert(1)</script>"
XSS_ATTR = '"><img src=x onerror=alert(2)>'


def dom(text: str) -> BeautifulSoup:
    """The page as the stdlib-backed parser of BeautifulSoup reads it."""
    return BeautifulSoup(text, "html.parser")


def classes(tag: Tag) -> list[str]:
    return list(tag.get("class") or [])


def handlers(tree: BeautifulSoup) -> list[tuple[str, str]]:
    """Every event-handler attribute (on…) of the page: there must be none."""
    return [(t.name, a) for t in tree.find_all(True) for a in t.attrs if a.lower().startswith("on")]


# --- fixtures --------------------------------------------------------------------------------

FAITH = MetricInfo(
    metric="Faithfulness", evaluator="Faithfulness", primary=True, threshold=0.7,
    higher_is_better=True,
)  # fmt: skip
RELEVANCY = MetricInfo(
    metric="Answer relevancy", evaluator="Answer Relevancy", primary=True, threshold=0.7,
    higher_is_better=True,
)  # fmt: skip
TOXICITY = MetricInfo(
    metric="Toxicity", evaluator="Toxicity", primary=True, threshold=0.5, higher_is_better=False
)
ROUGE = MetricInfo(
    metric="ROUGE-L", evaluator="Rouge Metric", primary=False, threshold=0.4,
    higher_is_better=True,
)  # fmt: skip
RECALL = MetricInfo(
    metric="Contextual recall", evaluator="Contextual Recall", primary=False, threshold=0.7,
    higher_is_better=True,
)  # fmt: skip
METRICS = [FAITH, RELEVANCY, TOXICITY, ROUGE, RECALL]
PRIMARY = [FAITH, RELEVANCY, TOXICITY]


def scored(info: MetricInfo, score: float, reason: str = "fine") -> MetricResult:
    ok = score >= info.threshold if info.higher_is_better else score <= info.threshold
    return MetricResult(
        evaluator=info.evaluator,
        metric=info.metric,
        status="scored",
        score=score,
        success=ok,
        threshold=info.threshold,
        reason=reason,
    )


def other(info: MetricInfo, status: str, reason: str) -> MetricResult:
    return MetricResult(
        evaluator=info.evaluator,
        metric=info.metric,
        status=status,  # type: ignore[arg-type]
        threshold=info.threshold,
        reason=reason,
    )


def no_recall() -> MetricResult:
    return other(RECALL, "skipped", "skipped: the case has no expected contexts")


def row(case_id: str, iteration: int, results: list[MetricResult], **kw) -> CaseRow:
    base = {
        "question": f"Question of {case_id}?",
        "expected_answer": f"Expected answer of {case_id}.",
        "answer": f"Answer of {case_id} (iteration {iteration}).",
        "contexts": [f"Context A of {case_id}", f"Context B of {case_id}"],
        "latency_ms": 800.0 + iteration,
        "input_tokens": 100,
        "output_tokens": 20,
        "status": "ok",
    }
    base.update(kw)
    return CaseRow(case_id=case_id, iteration=iteration, results=results, **base)


def good(case_id: str, iteration: int) -> CaseRow:
    return row(
        case_id,
        iteration,
        [
            scored(FAITH, 0.95),
            scored(RELEVANCY, 0.9),
            scored(TOXICITY, 0.01),
            scored(ROUGE, 0.6),
            no_recall(),
        ],
    )


def small_rows() -> list[CaseRow]:
    rows = []
    for it in (1, 2):
        rows.append(good("c1-good", it))
        # c2: the worst case: fails Faithfulness and Answer relevancy in both iterations
        rows.append(
            row(
                "c2-bad",
                it,
                [
                    scored(FAITH, 0.2 + it / 100, f"unsupported claim: 30 days (it {it})"),
                    scored(RELEVANCY, 0.4, "the answer is off topic"),
                    scored(TOXICITY, 0.02),
                    scored(ROUGE, 0.1, "low overlap with the expected answer"),
                    no_recall(),
                ],
                answer=f"You get 30 days. {XSS_SCRIPT} {XSS_ATTR}",
                contexts=["Leave policy: 25 days of annual leave.", f"Noise {XSS_SCRIPT}"],
            )
        )
        # c4: no retrieved context, Faithfulness skipped; Answer relevancy's judge errored
        rows.append(
            row(
                "c4-skip",
                it,
                [
                    other(FAITH, "skipped", "skipped: the target returned no retrieved context"),
                    other(RELEVANCY, "error", "error: judge answer could not be parsed"),
                    scored(TOXICITY, 0.03),
                    scored(ROUGE, 0.5),
                    no_recall(),
                ],
                contexts=[],
            )
        )
    # c3: the target failed in iteration 2
    rows.insert(2, good("c3-flaky", 1))
    rows.append(
        row(
            "c3-flaky",
            2,
            [],
            answer=None,
            contexts=[],
            latency_ms=None,
            input_tokens=None,
            output_tokens=None,
            status="target_error",
            error="ReadTimeout: the target did not answer within 30 s",
        )
    )
    # c5: toxic (lower is better: fails above the threshold)
    for it in (1, 2):
        rows.append(
            row(
                "c5-toxic",
                it,
                [
                    scored(FAITH, 0.9),
                    scored(RELEVANCY, 0.85),
                    scored(TOXICITY, 0.8, "toxicity probability 0.8"),
                    scored(ROUGE, 0.5),
                    no_recall(),
                ],
            )
        )
    return rows


REGRESSION = Regression(
    baseline_run_id="run-base-001",
    baseline_started_at="2024-05-01T09:00:00+00:00",
    baseline_report_prefix="test-reports/bot/240501-090000-",
    verdict="regression",
    reasons=["Faithfulness fell by 0.31"],
    deltas=[
        MetricDelta(
            metric="Answer relevancy",
            evaluator="Answer Relevancy",
            higher_is_better=True,
            baseline_average=0.7,
            current_average=0.71,
            delta=0.01,
            ci_low=-0.02,
            ci_high=0.04,
            significant=False,
            worse=False,
        ),
        MetricDelta(
            metric="Faithfulness",
            evaluator="Faithfulness",
            higher_is_better=True,
            baseline_average=0.95,
            current_average=0.64,
            delta=-0.31,
            ci_low=-0.45,
            ci_high=-0.12,
            significant=True,
            worse=True,
        ),
    ],
    new_failures=[CaseFlip(case_id="c2-bad", metric="Faithfulness", before=True, after=False)],
    fixed=[CaseFlip(case_id="c9-fixed", metric="Toxicity", before=False, after=True)],
)

CONFUSION = {
    "cases": 8,
    "accuracy": 0.75,
    "macro_f1": 0.7,
    "labels": ["leave", "pay"],
    "confusion_matrix": {"leave": {"leave": 5, "pay": 1}, "pay": {"leave": 1, "pay": 1}},
    "support": {"leave": 6, "pay": 2},
}


def make_report(**overrides) -> ReportData:
    rows = overrides.pop("rows", None) or small_rows()
    metrics = overrides.pop("metrics", METRICS)
    iterations = overrides.pop("iterations", 2)
    data = {
        "run_id": "run-cur-002",
        "target": "hr-bot",
        "target_kind": "lambdaArn",
        "suite": "test-suites/hr.csv",
        "report_prefix": "test-reports/hr-bot/240508-090000-",
        "started_at": "2024-05-08T09:00:00+00:00",
        "finished_at": "2024-05-08T09:03:20+00:00",
        "iterations": iterations,
        "config": {
            "target": {"lambdaArn": "arn:aws:lambda:eu-west-1:1:function:hr-bot"},
            "metrics": ["Faithfulness", "Answer Relevancy"],
            "note": XSS_SCRIPT,
        },
        "metrics": metrics,
        "stats": compute_stats(rows, metrics, iterations),
        "rows": rows,
        "problems": [
            Problem(
                severity="low",
                type="empty_context",
                description="1 case retrieved no context.",
                affected_cases=["c4-skip"],
                suggested_action="Check the knowledge base.",
            ),
            Problem(
                severity="high",
                type="below_threshold",
                description="Faithfulness average is below its threshold.",
                affected_cases=[f"case-{i}" for i in range(30)],
                suggested_action="Ground the answers in the retrieved context.",
                metric="Faithfulness",
            ),
        ],
        "insights": [
            Insight(
                type="most_difficult_case",
                description="c2-bad fails most metrics.",
                affected_cases=["c2-bad"],
            )
        ],
        "regression": REGRESSION,
        "gates": [
            {
                "metric": "Faithfulness",
                "gate": "Faithfulness",
                "threshold": 0.8,
                "average": 0.64,
                "passed": False,
            }
        ],
        "run_metrics": {"Intent classification": CONFUSION},
    }
    data.update(overrides)
    return ReportData(**data)


def judged(data: ReportData, **policy: Any) -> ReportData:
    """``data`` with the verdict Aggregate gives it under ``policy``."""
    reg = data.regression
    verdict = decide(
        items=len(data.rows),
        answered=sum(1 for r in data.rows if r.status == "ok"),
        stats=data.stats,
        gates=data.gates,
        regressed=reg is not None and reg.verdict == "regression",
        regression_reasons=reg.reasons if reg else (),
        baseline_run_id=reg.baseline_run_id if reg else None,
        policy=VerdictPolicy(**policy),
    )
    return data.model_copy(update={"verdict": verdict})


@pytest.fixture(scope="module")
def page() -> str:
    # a regression under --fail-on-regression, with a failed gate and a high problem
    return render_report(judged(make_report(), fail_on_regression=True, max_error_share=0.5))


@pytest.fixture(scope="module")
def tree(page: str) -> BeautifulSoup:
    return dom(page)


def section(tree: BeautifulSoup, anchor: str) -> Tag:
    return tree.find("section", id=anchor)


# --- verdict and order -----------------------------------------------------------------------


def test_page_is_one_self_contained_document(page: str, tree: BeautifulSoup) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert not tree.find_all("link") and not tree.find_all("img")
    assert all("src" not in n.attrs for n in tree.find_all(True))
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in page
    assert len(tree.find_all("style")) == 1


def test_verdict_regression_with_its_reasons(tree: BeautifulSoup) -> None:
    banner = tree.find("div", class_="verdict")
    assert "bad" in classes(banner)
    assert tree.find(id="verdict").get_text() == "REGRESSED"
    reasons = banner.get_text()
    assert "Faithfulness fell by 0.31" in reasons  # the regression
    assert "gate Faithfulness" in reasons  # the failed gate
    assert "more (see below)" in reasons  # the cases below threshold, the high problem
    assert tree.find("title").get_text().startswith("REGRESSED")


TOLERANT = {"max_error_share": 0.5}  # Answer relevancy errors on 2 of its 9 cases


@pytest.mark.parametrize(
    ("overrides", "policy", "headline", "tone"),
    [
        ({}, {}, "NOT MEASURED", "bad"),  # 22% errors, over the default 10%
        ({}, TOLERANT, "FAILED", "bad"),  # the gate; the regression only noted
        ({"regression": None}, TOLERANT, "FAILED", "bad"),
        ({"regression": None, "gates": []}, TOLERANT, "FAILED", "bad"),  # cases below
        ({"regression": None, "gates": []}, {**TOLERANT, "fail_on": "regressions"}, "PASSED",
         "warn"),  # passed, with the cases below threshold and the high problem noted
        ({}, {**TOLERANT, "fail_on": "never"}, "PASSED", "warn"),
    ],
)  # fmt: skip
def test_banner_is_the_runs_verdict(overrides, policy, headline, tone) -> None:
    data = judged(make_report(**overrides), **policy)
    tree = dom(render_report(data))
    assert tree.find(id="verdict").get_text() == headline == data.verdict.headline
    assert tone in classes(tree.find("div", class_="verdict"))
    banner = tree.find("div", class_="verdict").get_text()
    assert all(r[:60] in banner for r in data.verdict.reasons[:3])


def test_sections_in_order_regression_first(tree: BeautifulSoup) -> None:
    order = [s.attrs["id"] for s in tree.find_all("section")]
    assert order == [
        "regression",
        "gates",
        "problems",
        "metrics",
        "distributions",
        "heatmap",
        "worst",
        "run-figures",
        "config",
    ]
    toc = [a.attrs["href"] for a in tree.find("nav", class_="toc").find_all("a")]
    assert toc == [f"#{x}" for x in order]


def test_header_facts(tree: BeautifulSoup) -> None:
    meta = tree.find("dl", class_="meta").get_text()
    for fact in ("hr-bot", "test-suites/hr.csv", "run-cur-002", "2024-05-08T09:00:00+00:00"):
        assert fact in meta
    assert "3 min 20 s" in meta
    assert "test-reports/hr-bot/240508-090000-" in meta
    assert "5 (10 runs)" in meta  # 5 cases × 2 iterations
    cards = tree.find("div", class_="cards").get_text()
    assert "Target errors1runs that got no answer" in cards


def test_regression_section_lists_worse_metrics_flips_and_baseline(tree: BeautifulSoup) -> None:
    reg = section(tree, "regression")
    text = reg.get_text()
    assert "run-base-001" in text and "2024-05-01T09:00:00+00:00" in text
    tables = reg.find_all("table", class_="deltas")
    assert len(tables) == 2
    rows = tables[0].find("tbody").find_all("tr")
    assert len(rows) == 1 and "worse" in classes(rows[0])  # significant changes, worse first
    first = rows[0].get_text()
    assert "Faithfulness" in first and "−0.31" in first and "[−0.45, −0.12]" in first
    # the rest is folded away
    quiet = reg.find("details", class_="quiet")
    assert "1 metric without a significant change" in quiet.find("summary").get_text()
    (row,) = quiet.find("tbody").find_all("tr")
    assert "Answer relevancy" in row.get_text() and "no significant change" in row.get_text()
    assert "c2-bad" in text and "c9-fixed" in text
    assert len(reg.find_all("svg", class_="ci")) == 2


def test_no_regression_section_without_baseline() -> None:
    tree = dom(render_report(make_report(regression=None)))
    assert not tree.find_all("section", id="regression")


def test_gates_table(tree: BeautifulSoup) -> None:
    gates = section(tree, "gates")
    row = gates.find("tbody").find("tr")
    assert "worse" in classes(row)
    assert "FAILED" in row.get_text() and "≥ 0.8" in row.get_text() and "0.64" in row.get_text()


def test_problems_high_first_with_affected_cases_capped(tree: BeautifulSoup) -> None:
    problems = section(tree, "problems").find_all("article", class_="problem")
    assert [("high" in classes(p), "low" in classes(p)) for p in problems] == [
        (True, False),
        (False, True),
    ]
    high = problems[0]
    assert "Ground the answers in the retrieved context." in high.get_text()
    assert len(high.find_all("code")) == 12
    assert "and 18 more" in high.get_text()
    assert "c2-bad fails most metrics." in section(tree, "problems").get_text()  # insight


# --- escaping --------------------------------------------------------------------------------


def test_untrusted_text_is_inert(page: str, tree: BeautifulSoup) -> None:
    scripts = tree.find_all("script")
    assert len(scripts) == 1  # the page's own
    assert "alert" not in scripts[0].get_text()
    assert not tree.find_all("img")
    assert not handlers(tree), "an event-handler attribute leaked"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&gt;&lt;img src=x onerror=alert(2)&gt;" in page and "<img" not in page
    # ... and reads back as the very text the target returned
    answer = (
        section(tree, "worst").find("div", class_="answer").find("div", class_="txt").get_text()
    )
    assert answer == f"You get 30 days. {XSS_SCRIPT} {XSS_ATTR}"
    assert XSS_SCRIPT in section(tree, "config").get_text()


def test_attribute_context_is_escaped() -> None:
    info = MetricInfo(
        metric='Evil"><svg onload=alert(3)>',
        evaluator="Evil",
        primary=True,
        threshold=0.5,
        higher_is_better=True,
    )
    rows = [row("x" + XSS_ATTR, 1, [scored(info, 0.2, XSS_SCRIPT)])]
    page = render_report(make_report(rows=rows, metrics=[info], iterations=1, regression=None))
    tree = dom(page)
    assert not handlers(tree)
    assert not tree.find_all("img") and len(tree.find_all("script")) == 1
    hist = section(tree, "distributions").find("figure", class_="hist")
    assert hist.attrs["data-metric"] == info.metric  # intact, as an attribute value


def test_content_security_policy_pins_the_only_script(page: str, tree: BeautifulSoup) -> None:
    meta = next(m for m in tree.find_all("meta") if m.attrs.get("http-equiv"))
    policy = meta.attrs["content"] or ""
    assert "default-src 'none'" in policy and "unsafe-inline" not in policy.split("script-src")[1]
    script = tree.find("script").get_text()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"'sha256-{digest}'" in policy


def test_control_characters_and_lone_surrogates_survive_encoding() -> None:
    rows = [good("c1", 1)]
    rows[0] = rows[0].model_copy(update={"answer": "bad\x00byte \ud800 here"})
    page = render_report(make_report(rows=rows, iterations=1, regression=None))
    page.encode("utf-8")  # would raise on a lone surrogate
    assert "\x00" not in page


# --- charts ----------------------------------------------------------------------------------


def test_metric_bars_primary_first_with_threshold_markers(tree: BeautifulSoup) -> None:
    metrics = section(tree, "metrics")
    bars = metrics.find("svg", class_="bars")  # primary metrics
    labels = [t.get_text() for t in bars.find_all("text", class_="label")]
    assert labels == ["↑ Faithfulness", "↑ Answer relevancy", "↓ Toxicity"]
    others = metrics.find("details", class_="others").find("svg", class_="bars")
    labels = [t.get_text() for t in others.find_all("text", class_="label")]
    assert labels == ["↑ ROUGE-L", "↑ Contextual recall"]
    assert "Contextual recall" in others.get_text() and "9 skipped" in others.get_text()
    # every metric has its threshold marker; those with a score their average dot
    assert len(bars.find_all("line", class_="threshold")) == 3
    assert len(others.find_all("line", class_="threshold")) == 2
    assert len(others.find_all("circle")) == 1
    dots = bars.find_all("circle")
    assert len(dots) == 3
    tips = [d.get_text() for d in dots]
    assert tips[0] == "average 0.726 (meets threshold ≥ 0.7)"  # Faithfulness: 5.08 / 7
    assert tips[2] == "average 0.192 (meets threshold ≤ 0.5)"  # Toxicity, lower is better
    # the dot sits left of the threshold marker for Toxicity, right of it for Faithfulness
    marks = bars.find_all("line", class_="threshold")
    x = [float(d.attrs["cx"]) - float(m.attrs["x1"]) for d, m in zip(dots, marks, strict=False)]
    assert x[0] > 0 and x[2] < 0


def test_metric_table_has_iteration_columns(tree: BeautifulSoup) -> None:
    table = section(tree, "metrics").find("table", class_="sortable")
    head = table.find("thead").get_text()
    assert "Instability" in head and "Pass rate by iteration" in head
    faith = next(r for r in table.find_all("tr") if "Faithfulness" in r.get_text())
    assert "75% · 66.7%" in faith.get_text()  # iteration 2: c3 failed


def test_one_histogram_per_scored_metric(tree: BeautifulSoup) -> None:
    dist = section(tree, "distributions")
    figures = dist.find_all("figure", class_="hist")
    folded = dist.find("details", class_="others").find_all("figure", class_="hist")
    assert [f.attrs["data-metric"] for f in folded] == ["ROUGE-L"]  # not primary
    assert [f.attrs["data-metric"] for f in figures] == [
        "Faithfulness",
        "Answer relevancy",
        "Toxicity",
        "ROUGE-L",
    ]  # Contextual recall: skipped everywhere, nothing to plot
    for figure in figures:
        assert figure.find("svg").find_all("rect", class_="bin")
        assert figure.find_all("line", class_="threshold")
    faith = figures[0]
    counts = [int(re.search(r": (\d+) ", r.get_text()).group(1)) for r in faith.find_all("rect")]
    assert sum(counts) == 7  # 9 rows: 1 target error, 2 skipped


def test_heatmap_one_cell_per_case_and_primary_metric(tree: BeautifulSoup) -> None:
    heat = section(tree, "heatmap")
    cells = heat.find_all("rect", class_="hm-cell")
    assert len(cells) == 5 * 3
    assert all(c.find("title").get_text() for c in cells)
    rows = [t.get_text() for t in heat.find_all("text", class_="rowhead")]
    assert rows[0] == "c2-bad"  # worst first
    tips = [c.find("title").get_text() for c in cells]
    assert any("c2-bad · Faithfulness: passed 0/2" in t for t in tips)
    assert any("c4-skip · Faithfulness: skipped" in t for t in tips)


def test_heatmap_is_capped() -> None:
    rows = [good(f"case-{i:04d}", 1) for i in range(HEATMAP_ROWS + 50)]
    page = render_report(make_report(rows=rows, iterations=1, regression=None))
    heat = section(dom(page), "heatmap")
    assert len(heat.find_all("rect", class_="hm-cell")) == HEATMAP_ROWS * 3
    assert f"Showing the {HEATMAP_ROWS} worst of {HEATMAP_ROWS + 50} cases" in heat.get_text()


# --- worst cases -----------------------------------------------------------------------------


def test_worst_cases_ranked_with_their_details(tree: BeautifulSoup) -> None:
    worst = section(tree, "worst")
    cards = worst.find_all("details", class_="case")
    ids = [c.find("code", class_="cid").get_text() for c in cards]
    assert ids[0] == "c2-bad"
    assert set(ids) == {"c2-bad", "c3-flaky", "c4-skip", "c5-toxic"}  # c1-good passes
    first = cards[0]
    text = first.get_text()
    assert "Question of c2-bad?" in text and "Expected answer of c2-bad." in text
    assert "fails 2 of 3 primary metrics" in text
    failing = first.find("table", class_="failing")
    metrics = [r.find("td").get_text() for r in failing.find("tbody").find_all("tr")]
    assert metrics == ["Faithfulness", "Answer relevancy"]  # the primary ones in view
    folded = first.find("details", class_="other-failing")
    assert "Other failing metrics (1)" in folded.find("summary").get_text()
    (rouge,) = folded.find("tbody").find_all("tr")
    assert (
        "ROUGE-L" in rouge.get_text() and "low overlap with the expected answer" in rouge.get_text()
    )
    assert "0.21 / 0.22" in failing.get_text()
    assert "unsupported claim: 30 days (it 1)" in failing.get_text()
    assert "unsupported claim: 30 days (it 2)" in failing.get_text()  # reasons per iteration
    contexts = next(d for d in first.find_all("details") if "Retrieved contexts" in d.get_text())
    assert "Leave policy: 25 days of annual leave." in contexts.get_text()
    assert "Toxicity" not in failing.get_text()  # passing metrics are not listed


def test_worst_case_shows_target_error_and_lower_is_better_failure(tree: BeautifulSoup) -> None:
    worst = section(tree, "worst")
    cards = {
        c.find("code", class_="cid").get_text(): c for c in worst.find_all("details", class_="case")
    }
    flaky = cards["c3-flaky"]
    assert (
        "ReadTimeout: the target did not answer within 30 s"
        in flaky.find(class_="error").get_text()
    )
    assert "target error" in flaky.find("summary").get_text()
    toxic = cards["c5-toxic"].find("table", class_="failing").get_text()
    assert "Toxicity" in toxic and "≤ 0.5" in toxic and "toxicity probability 0.8" in toxic
    skip = cards["c4-skip"].find("table", class_="failing").get_text()
    assert "error: judge answer could not be parsed" in skip
    assert "Faithfulness" not in skip  # skipped, not failed


def test_heatmap_links_to_worst_cards(tree: BeautifulSoup) -> None:
    links = section(tree, "heatmap").find("svg").find_all("a")
    targets = {a.attrs["href"] for a in links}
    anchors = {
        "#" + c.attrs["id"] for c in section(tree, "worst").find_all("details", class_="case")
    }
    assert targets == anchors


# --- run-level figures and configuration -----------------------------------------------------


def test_confusion_matrix_table(tree: BeautifulSoup) -> None:
    figures = section(tree, "run-figures")
    matrix = figures.find("table", class_="matrix")
    body = [[c.get_text() for c in r.find_all("td")] for r in matrix.find("tbody").find_all("tr")]
    assert body == [["5", "1"], ["1", "1"]]
    assert [h.get_text() for h in matrix.find("tbody").find_all("th")] == ["leave", "pay"]
    assert "0.75" in figures.get_text() and "Intent classification" in figures.get_text()


def test_configuration_listed(tree: BeautifulSoup) -> None:
    config = section(tree, "config")
    keys = [dt.get_text() for dt in config.find_all("dt")]
    assert keys == ["target", "metrics", "note"]
    assert "arn:aws:lambda:eu-west-1:1:function:hr-bot" in config.get_text()


# --- edge cases ------------------------------------------------------------------------------


def test_empty_run() -> None:
    data = ReportData(
        run_id="r0",
        target="t",
        target_kind="lambdaArn",
        suite="s.csv",
        started_at="2024-01-01T00:00:00+00:00",
        finished_at="not a time",
        iterations=1,
        config={},
        metrics=[],
        stats=[],
        rows=[],
    )
    tree = dom(render_report(data))
    assert tree.find(id="verdict").get_text() == "NOT MEASURED"
    assert "no case to measure" in tree.find("div", class_="verdict").get_text()
    assert "No case failed" in section(tree, "worst").get_text()
    assert "No configuration recorded." in section(tree, "config").get_text()


def test_run_where_every_target_call_failed() -> None:
    rows = [
        row(f"c{i}", 1, [], answer=None, contexts=[], status="target_error", error="boom")
        for i in range(3)
    ]
    tree = dom(render_report(make_report(rows=rows, iterations=1, regression=None, gates=[])))
    assert tree.find(id="verdict").get_text() == "NOT MEASURED"
    assert "no target call succeeded" in tree.find("div", class_="verdict").get_text()
    assert "No score to show." in section(tree, "distributions").get_text()
    assert len(section(tree, "heatmap").find_all("rect", class_="hm-cell")) == 9
    assert len(section(tree, "worst").find_all("details", class_="case")) == 3
    assert "no result" in section(tree, "metrics").find("svg", class_="bars").get_text()


def test_one_iteration_has_no_iteration_columns() -> None:
    rows = [r for r in small_rows() if r.iteration == 1]
    tree = dom(render_report(make_report(rows=rows, iterations=1)))
    assert "Instability" not in section(tree, "metrics").get_text()
    assert "iteration 1 of" not in section(tree, "worst").get_text()


def test_large_run_stays_small() -> None:
    filler = "Lorem ipsum dolor sit amet. " * 60  # ~1.7 kB per context, 5 per row
    rows = [
        row(
            f"case-{i:04d}",
            1,
            [
                scored(FAITH, (i % 10) / 10, "reason " * 20),
                scored(RELEVANCY, 0.8),
                scored(TOXICITY, 0.1),
            ],
            contexts=[f"CTX-{i}-{k} {filler}" for k in range(5)],
            answer="An answer. " * 40,
        )
        for i in range(2000)
    ]
    metrics = [FAITH, RELEVANCY, TOXICITY]
    page = render_report(
        make_report(rows=rows, metrics=metrics, iterations=1, run_metrics={}, regression=None)
    )
    assert len(page.encode()) < 2_000_000  # every context would be > 17 MB
    assert page.count("CTX-") == WORST_CASES * 5  # contexts of the worst cases only


# --- leaderboard -----------------------------------------------------------------------------


def leaderboard() -> Leaderboard:
    def entry(target: str, faith: float, tox: float, **kw) -> LeaderboardEntry:
        return LeaderboardEntry(
            target=target,
            run_id=f"run-{target}",
            report_prefix=f"test-reports/{target}/x-",
            averages={"Faithfulness": faith, "Toxicity": tox, "ROUGE-L": None},
            pass_rates={"Faithfulness": faith - 0.1, "Toxicity": 0.9, "ROUGE-L": None},
            **kw,
        )

    return Leaderboard(
        suite="test-suites/hr.csv",
        created_at="2024-05-09T10:00:00+00:00",
        metrics=[FAITH, TOXICITY, ROUGE],
        entries=[
            entry("bot-a", 0.8, 0.3, latency_median_ms=900, latency_p95_ms=2000, total_cost=1.5),
            entry("bot-b", 0.9, 0.1, latency_median_ms=400, latency_p95_ms=900, total_cost=0.2),
            entry(f"bot-{XSS_SCRIPT}", 0.5, 0.2, errors=3),
        ],
        best_per_metric={"Faithfulness": "bot-b", "Toxicity": "bot-b"},
        difficult_cases=[
            DifficultCase(
                case_id=f"d{i}",
                question=f"Hard question {i} {XSS_ATTR}",
                failed_by=["bot-a"],
                pass_share={"bot-a": 0.0, "bot-b": 0.5, f"bot-{XSS_SCRIPT}": 0.25},
            )
            for i in range(4)
        ],
        fastest="bot-b",
        slowest="bot-a",
        cheapest="bot-b",
        costliest="bot-a",
    )


def test_leaderboard_highlights_best_per_metric() -> None:
    board = leaderboard()
    rows_verdicts = [e.verdict for e in board.entries]
    tree = dom(render_leaderboard(board))
    table = tree.find("table", class_="leaderboard")
    heads = [th.get_text() for th in table.find("thead").find_all("th")]
    # verdict, pass rate and gates come right after the target, so a phone shows them (issue 28)
    assert heads[:7] == [
        "Target",
        "Verdict",
        "Pass rate",
        "Gates",
        "● ↑ Faithfulness",
        "● ↓ Toxicity",
        "↑ ROUGE-L",
    ]
    assert heads[7:] == ["Latency median", "Latency p95", "Tokens", "Cost", "Errors"]
    best = {}
    for tr in table.find("tbody").find_all("tr"):
        target = tr.find("strong").get_text()
        for col, td in enumerate(tr.find_all("td")):
            if "best" in classes(td):
                best[heads[col]] = target
    assert best == {"● ↑ Faithfulness": "bot-b", "● ↓ Toxicity": "bot-b"}
    rows = table.find("tbody").find_all("tr")
    b_cells = [td.get_text() for td in rows[1].find_all("td")]
    # these entries carry no verdict (a leaderboard.json written before verdicts): "—"
    assert rows_verdicts[1] is None and b_cells[1] == "—"
    assert b_cells[3] == "—"  # no gate in these runs
    assert b_cells[4].startswith("★ 0.9") and "80% pass" in b_cells[4]
    assert b_cells[7:] == ["400 ms", "900 ms", "—", "$0.2000", "0"]
    cards = tree.find("div", class_="cards").get_text()
    assert "Fastestbot-b" in cards and "Costliestbot-a" in cards
    best_section = tree.find("section", id="best")
    assert "best: bot-b" in best_section.get_text()


def test_leaderboard_heatmap_and_escaping() -> None:
    page = render_leaderboard(leaderboard())
    tree = dom(page)
    heat = tree.find("section", id="difficult")
    assert len(heat.find_all("rect", class_="hm-cell")) == 4 * 3
    assert "d0 · bot-b: passed 50%" in heat.get_text()
    assert len(tree.find_all("script")) == 1 and not tree.find_all("img")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert not handlers(tree)


def test_empty_leaderboard() -> None:
    board = Leaderboard(
        suite="s",
        created_at="now",
        metrics=[],
        entries=[],
        best_per_metric={},
        difficult_cases=[],
    )
    tree = dom(render_leaderboard(board))
    assert "No difficult case." in tree.find("section", id="difficult").get_text()
