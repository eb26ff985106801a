"""report.html in a real browser: headless Chromium renders it, screenshots it, dumps its DOM.

Proves the page is self-contained and renders (the verdict and the metric names are in the
DOM Chromium built, the screenshot is far from a blank page) and that text from the run stays
text (an injected script neither ran nor became an element).
"""

from __future__ import annotations

import io
import random
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bs4 import BeautifulSoup
from PIL import Image

from evalrunner.evaluators.base import MetricResult
from evalrunner.reports.analysis.stats import compute_stats
from evalrunner.reports.model import (
    CaseFlip,
    CaseRow,
    Insight,
    MetricDelta,
    MetricInfo,
    Problem,
    Regression,
    ReportData,
)
from evalrunner.reports.verdict import VerdictPolicy, decide
from evalrunner.reports.views.html import render_report

CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = (
    f"{CHROMIUM} is missing: the browser check needs Debian's Chromium. Install it with "
    "`apt-get update && apt-get install -y chromium` (as root; .ci/run does this on CI)."
)
XSS = '<script>document.title="PWNED"</script>"><img src=x onerror=alert(1)>'

METRICS = [
    MetricInfo(
        metric="Faithfulness",
        evaluator="Faithfulness",
        primary=True,
        threshold=0.7,
        higher_is_better=True,
    ),
    MetricInfo(
        metric="Answer relevancy",
        evaluator="Answer Relevancy",
        primary=True,
        threshold=0.7,
        higher_is_better=True,
    ),
    MetricInfo(
        metric="BERTScore F1",
        evaluator="BERT Score",
        primary=True,
        threshold=0.75,
        higher_is_better=True,
    ),
    MetricInfo(
        metric="BERTScore precision",
        evaluator="BERT Score",
        primary=False,
        threshold=0.75,
        higher_is_better=True,
    ),
    MetricInfo(
        metric="Toxicity", evaluator="Toxicity", primary=True, threshold=0.5, higher_is_better=False
    ),
    MetricInfo(
        metric="Intent correct",
        evaluator="Intent classification",
        primary=True,
        threshold=0.5,
        higher_is_better=True,
    ),
]

TOPICS = ["leave", "pension", "payroll", "travel", "security", "onboarding", "benefits"]


def _result(info: MetricInfo, score: float, reason: str) -> MetricResult:
    passed = score >= info.threshold if info.higher_is_better else score <= info.threshold
    return MetricResult(
        evaluator=info.evaluator,
        metric=info.metric,
        status="scored",
        score=round(score, 4),
        success=passed,
        threshold=info.threshold,
        reason=reason,
    )


def synthetic_report(cases: int, iterations: int = 2, seed: int = 7) -> ReportData:
    """A realistic run: mostly good answers, a hard tail, skips, evaluator and target errors,
    a baseline comparison, gates, problems, insights and a confusion matrix."""
    rng = random.Random(seed)
    rows: list[CaseRow] = []
    for c in range(cases):
        topic = TOPICS[c % len(TOPICS)]
        difficulty = rng.random() ** 3  # most cases easy, a few hard
        for it in range(1, iterations + 1):
            case_id = f"{topic}-{c + 1:04d}"
            question = f"What does the policy say about {topic} in situation {c + 1}?"
            expected = f"The {topic} policy grants {c % 30 + 1} days, see section {c % 9 + 1}."
            if c == 2:
                question += " " + XSS
            if c == 5 and it == 2:
                rows.append(
                    CaseRow(
                        case_id=case_id,
                        iteration=it,
                        categories=[topic],
                        question=question,
                        expected_answer=expected,
                        status="target_error",
                        error="ReadTimeout: the target did not answer within 30 s",
                    )
                )
                continue
            noise = rng.gauss(0, 0.06)
            base = max(0.0, min(1.0, 0.95 - difficulty + noise))
            answer = (
                f"According to the {topic} policy, employees get {c % 30 + 1} days."
                if base > 0.6
                else f"I am not sure; maybe {rng.randint(1, 40)} days? {XSS if c == 2 else ''}"
            )
            contexts = [
                f"[{topic}.md §{k}] The {topic} policy applies to all employees. " * 3
                for k in range(1 + c % 4)
            ]
            results = []
            for info in METRICS:
                if info.metric == "Toxicity":
                    score = max(0.0, min(1.0, rng.random() * 0.1 + (0.5 if c % 97 == 3 else 0)))
                    results.append(_result(info, score, f"toxicity probability {score:.3f}"))
                elif info.metric == "Intent correct":
                    ok = rng.random() > difficulty * 0.8
                    results.append(
                        _result(
                            info,
                            1.0 if ok else 0.0,
                            f"intent {topic!r} as expected"
                            if ok
                            else f"intent 'other', expected {topic!r}",
                        )
                    )
                elif info.metric == "Faithfulness" and c % 11 == 4:
                    results.append(
                        MetricResult(
                            evaluator=info.evaluator,
                            metric=info.metric,
                            status="skipped",
                            threshold=info.threshold,
                            reason="skipped: the target returned no retrieved context",
                        )
                    )
                elif info.metric == "Answer relevancy" and c % 53 == 7:
                    results.append(
                        MetricResult(
                            evaluator=info.evaluator,
                            metric=info.metric,
                            status="error",
                            threshold=info.threshold,
                            reason="error: judge answer could not be parsed",
                        )
                    )
                else:
                    score = max(0.0, min(1.0, base + rng.gauss(0, 0.08)))
                    results.append(
                        _result(
                            info,
                            score,
                            f"{info.metric}: {int(score * 10)} of 10 claims supported"
                            + (f" {XSS}" if c == 2 else ""),
                        )
                    )
            rows.append(
                CaseRow(
                    case_id=case_id,
                    iteration=it,
                    categories=[topic],
                    question=question,
                    expected_answer=expected,
                    answer=answer,
                    contexts=contexts,
                    latency_ms=400 + rng.random() * 1800 + difficulty * 3000,
                    input_tokens=300 + rng.randint(0, 400),
                    output_tokens=40 + rng.randint(0, 200),
                    cost=0.0004 + rng.random() * 0.001,
                    status="ok",
                    results=results,
                )
            )
    stats = compute_stats(rows, METRICS, iterations)
    regression = Regression(
        baseline_run_id="run-2024-05-01-a1b2",
        baseline_started_at="2024-05-01T09:00:00+00:00",
        baseline_report_prefix="test-reports/hr-bot/240501-090000-",
        verdict="regression",
        reasons=["Faithfulness average fell by 0.061 (95% interval −0.092 to −0.031)"],
        deltas=[
            MetricDelta(
                metric="Faithfulness",
                evaluator="Faithfulness",
                higher_is_better=True,
                baseline_average=0.84,
                current_average=0.779,
                delta=-0.061,
                ci_low=-0.092,
                ci_high=-0.031,
                significant=True,
                worse=True,
            ),
            MetricDelta(
                metric="Answer relevancy",
                evaluator="Answer Relevancy",
                higher_is_better=True,
                baseline_average=0.80,
                current_average=0.81,
                delta=0.01,
                ci_low=-0.02,
                ci_high=0.04,
                significant=False,
                worse=False,
            ),
            MetricDelta(
                metric="Toxicity",
                evaluator="Toxicity",
                higher_is_better=False,
                baseline_average=0.08,
                current_average=0.055,
                delta=-0.025,
                ci_low=-0.04,
                ci_high=-0.01,
                significant=True,
                worse=False,
            ),
        ],
        new_failures=[
            CaseFlip(
                case_id=f"{TOPICS[k % 7]}-{k + 1:04d}",
                metric="Faithfulness",
                before=True,
                after=False,
            )
            for k in range(0, min(cases, 40), 3)
        ],
        fixed=[CaseFlip(case_id="leave-0001", metric="Toxicity", before=False, after=True)],
    )
    data = ReportData(
        run_id="run-2024-05-08-c3d4",
        target="hr-bot-AGENT42-ALIAS7",
        target_kind="agentId",
        suite="test-suites/hr.xlsx",
        started_at="2024-05-08T09:00:00+00:00",
        finished_at="2024-05-08T09:07:41+00:00",
        iterations=iterations,
        config={
            "target": {"agentId": "AGENT42", "agentAliasId": "ALIAS7", "region": "eu-west-1"},
            "metrics": [m.evaluator for m in METRICS],
            "thresholds": {"Faithfulness": 0.7},
            "fail_under": {"Faithfulness": 0.8},
            "iterations": iterations,
            "suite_key": "test-suites/hr.xlsx",
            "api_key": "****",
        },
        metrics=METRICS,
        stats=stats,
        rows=rows,
        problems=[
            Problem(
                severity="high",
                type="regression",
                description="Faithfulness is significantly worse than the baseline.",
                affected_cases=[f.case_id for f in regression.new_failures],
                suggested_action="Compare the retrieval settings with the baseline run.",
                metric="Faithfulness",
            ),
            Problem(
                severity="medium",
                type="target_errors",
                description="1 run got no answer from the target (ReadTimeout).",
                affected_cases=["onboarding-0006"],
                suggested_action="Raise the target timeout or check the agent's health.",
            ),
            Problem(
                severity="low",
                type="empty_context",
                description="Some cases retrieved no context; Faithfulness was skipped.",
                affected_cases=[f"case-{k}" for k in range(30)],
                suggested_action="Check the knowledge base covers these questions.",
                metric="Faithfulness",
            ),
        ],
        insights=[
            Insight(
                type="weakest_metric",
                description="Faithfulness has the lowest pass rate.",
                metric="Faithfulness",
                value=0.62,
            ),
            Insight(
                type="slowest",
                description="The slowest answers take over 3 s.",
                affected_cases=["payroll-0003"],
                suggested_action="Look at the agent trace of these cases.",
            ),
        ],
        regression=regression,
        gates=[
            {
                "metric": "Faithfulness",
                "gate": "Faithfulness",
                "threshold": 0.8,
                "average": 0.779,
                "passed": False,
            },
            {
                "metric": "Toxicity",
                "gate": "Toxicity",
                "threshold": 0.2,
                "average": 0.055,
                "passed": True,
            },
        ],
        run_metrics={
            "Intent classification": {
                "cases": 118,
                "accuracy": 0.84,
                "macro_precision": 0.81,
                "macro_recall": 0.8,
                "macro_f1": 0.8,
                "labels": ["benefits", "leave", "other", "payroll"],
                "confusion_matrix": {
                    "benefits": {"benefits": 30, "leave": 2, "other": 3, "payroll": 0},
                    "leave": {"benefits": 1, "leave": 35, "other": 4, "payroll": 0},
                    "payroll": {"benefits": 0, "leave": 1, "other": 8, "payroll": 34},
                },
                "support": {"benefits": 35, "leave": 40, "payroll": 43},
            },
            "Retrieval": {"mrr": 0.71, "hit_rate@k": 0.9, "k": 5, "cases": 118},
        },
    )
    # the verdict of a run under --fail-on-regression (Aggregate's, from the same figures)
    verdict = decide(
        items=len(data.rows),
        answered=sum(1 for r in data.rows if r.status == "ok"),
        stats=data.stats,
        gates=data.gates,
        regressed=True,
        regression_reasons=regression.reasons,
        baseline_run_id=regression.baseline_run_id,
        policy=VerdictPolicy(fail_on_regression=True),
    )
    return data.model_copy(update={"verdict": verdict})


# --- reading Chromium's output ---------------------------------------------------------------


def png_pixels(data: bytes) -> np.ndarray:
    """A PNG as an array of shape (height, width, 3), RGB."""
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG", image.format
        return np.asarray(image.convert("RGB"))


def distinct_colours(pixels: np.ndarray) -> int:
    packed = pixels.astype(np.uint32)
    return len(np.unique((packed[..., 0] << 16) | (packed[..., 1] << 8) | packed[..., 2]))


def pixels_of(pixels: np.ndarray, rgb: tuple[int, int, int]) -> int:
    return int(np.all(pixels == np.array(rgb, dtype=np.uint8), axis=-1).sum())


def chromium(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    profile = cwd / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
        check=False,
    )


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(INSTALL_HINT)
    tmp = tmp_path_factory.mktemp("browser")
    page = tmp / "report.html"
    page.write_text(render_report(synthetic_report(60)), encoding="utf-8")
    blank = tmp / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>", encoding="utf-8")
    shot, blank_shot = tmp / "report.png", tmp / "blank.png"
    size = "--window-size=1280,2000"
    taken = chromium(f"--screenshot={shot}", size, page.as_uri(), cwd=tmp)
    assert shot.exists(), f"no screenshot: {taken.stderr[-2000:]}"
    chromium(f"--screenshot={blank_shot}", size, blank.as_uri(), cwd=tmp)
    dom = chromium("--dump-dom", page.as_uri(), cwd=tmp)
    assert dom.returncode == 0, dom.stderr[-2000:]
    return {"png": shot.read_bytes(), "blank": blank_shot.read_bytes(), "dom": dom.stdout}


def test_chromium_is_installed() -> None:
    assert Path(CHROMIUM).exists(), INSTALL_HINT


def test_screenshot_is_a_rendered_page(rendered: dict[str, object]) -> None:
    png, blank = rendered["png"], rendered["blank"]
    assert isinstance(png, bytes) and isinstance(blank, bytes)
    pixels, blank_pixels = png_pixels(png), png_pixels(blank)
    assert pixels.shape == (2000, 1280, 3)
    assert distinct_colours(blank_pixels) <= 2
    # text, charts and the banner: thousands of colours where a blank page has one
    assert distinct_colours(pixels) > 500
    assert len(png) > 10 * len(blank)
    # the verdict banner (regression: #b3470b) is drawn near the top, and it is big
    assert pixels_of(pixels[:500], (0xB3, 0x47, 0x0B)) > 20_000
    # the charts' pass / fail colours are on screen (the regression's interval plot, badges)
    assert pixels_of(pixels, (0x00, 0x72, 0xB2)) > 100
    assert pixels_of(pixels, (0xD5, 0x5E, 0x00)) > 100


def test_dom_holds_verdict_and_metrics(rendered: dict[str, object]) -> None:
    dom = rendered["dom"]
    assert isinstance(dom, str)
    assert 'id="verdict">REGRESSED<' in dom
    for info in METRICS:
        assert info.metric in dom
    assert "hr-bot-AGENT42-ALIAS7" in dom
    # the page's script ran: the Content-Security-Policy's hash of it is right
    assert re.search(r'<html[^>]* data-js="on"', dom), "the page's own script was blocked"
    assert dom.count('class="hm-cell"') == 60 * 5  # cases × primary metrics


def test_injected_markup_stays_text(rendered: dict[str, object]) -> None:
    dom = rendered["dom"]
    assert isinstance(dom, str)
    # the injected script would have retitled the page: the page's own title is intact
    assert "<title>REGRESSED · hr-bot-AGENT42-ALIAS7" in dom
    assert "PWNED" not in dom.split("</title>")[0]
    tree = BeautifulSoup(dom, "html.parser")
    assert len(tree.find_all("script")) == 1  # the page's own only
    assert not tree.find_all("img")
    elements = tree.find_all(True)
    assert not [(e.name, a) for e in elements for a in e.attrs if a.lower().startswith("on")]
    # ... while the text the target returned is there, as text
    assert '&lt;script&gt;document.title="PWNED"&lt;/script&gt;' in dom
    assert "&lt;img src=x onerror=alert(1)&gt;" in dom
