"""Weak spots: alike failing questions and categories become named groups; a group well below
the run's pass rate is a ``weakness`` problem and a row of report.html."""

from __future__ import annotations

import numpy as np
import pytest
from bs4 import BeautifulSoup

from evalrunner.evaluators.base import MetricResult
from evalrunner.pipeline.context import ENV_WEAK_SPOTS, Settings
from evalrunner.reports.analysis.clustering import average_linkage, group_name, group_names, tfidf
from evalrunner.reports.analysis.weakness import (
    MODE_ENV,
    find_weak_spots,
    question_embedder,
    weak_spots_enabled,
    weakness_problems,
)
from evalrunner.reports.model import CaseRow, MetricInfo, ReportData
from evalrunner.reports.views.html import render_report

INFO = MetricInfo(
    metric="Token F1", evaluator="Token F1", primary=True, threshold=0.5, higher_is_better=True
)

#: (case, category, question, passed)
CASES = [
    ("p1", "payroll", "When is the monthly salary paid into my bank account?", False),
    ("p2", "payroll", "Which day of the month is salary paid?", False),
    ("p3", "payroll", "Is my salary paid on the last working day of the month?", False),
    ("l1", "leave", "How many days of annual leave do I get?", True),
    ("l2", "leave", "Can I carry annual leave days over?", True),
    ("l3", "leave", "How do I book annual leave days?", False),
    ("b1", "benefits", "Does the pension scheme match contributions?", True),
    ("b2", "benefits", "What pension contributions does the company match?", True),
]


def _data(cases=CASES) -> ReportData:
    rows = [
        CaseRow(
            case_id=cid,
            iteration=1,
            categories=[cat],
            question=q,
            answer="a",
            status="ok",
            results=[
                MetricResult(
                    evaluator="Token F1",
                    metric="Token F1",
                    status="scored",
                    score=0.9 if ok else 0.1,
                    success=ok,
                    threshold=0.5,
                    reason="ok" if ok else "missing the date",
                )
            ],
        )
        for cid, cat, q, ok in cases
    ]
    return ReportData(
        run_id="r",
        target="t",
        target_kind="lambda",
        suite="s",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        iterations=1,
        config={},
        metrics=[INFO],
        stats=[],
        rows=rows,
    )


def test_average_linkage_by_hand():
    # 0 and 1 are alike (cos 0.8), 2 is apart; 3 is 0's twin
    v = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [1.0, 0.0]])
    assert average_linkage(v, 0.9) == [0, 1, 2, 0]  # only the twins merge
    # then {0,3} with 1: mean of 0.8, 0.8 = 0.8 ≥ 0.7; 2 joins nobody (0.0, 0.6 → 0.2 avg)
    assert average_linkage(v, 0.7) == [0, 0, 1, 0]
    assert average_linkage(v, -1.0) == [0, 0, 0, 0]


def _reference_average_linkage(vectors: np.ndarray, min_similarity: float) -> list[int]:
    """The whole-matrix search average_linkage replaced (each merge scans every pair), kept
    here to compare against."""
    n = len(vectors)
    unit = vectors / np.where(
        (norms := np.linalg.norm(vectors, axis=1, keepdims=True)) == 0, 1, norms
    )
    sim = unit @ unit.T
    sizes, alive = np.ones(n), np.ones(n, dtype=bool)
    members: list[list[int]] = [[i] for i in range(n)]
    np.fill_diagonal(sim, -np.inf)
    while alive.sum() > 1:
        masked = np.where(alive[:, None] & alive[None, :], sim, -np.inf)
        a, b = divmod(int(np.argmax(masked)), n)
        if masked[a, b] < min_similarity:
            break
        a, b = min(a, b), max(a, b)
        merged = (sim[a] * sizes[a] + sim[b] * sizes[b]) / (sizes[a] + sizes[b])
        sim[a, :], sim[:, a] = merged, merged
        sim[a, a] = -np.inf
        sizes[a] += sizes[b]
        alive[b] = False
        members[a] += members[b]
    labels = [0] * n
    groups = sorted((sorted(members[i]) for i in range(n) if alive[i]), key=lambda m: m[0])
    for label, group in enumerate(groups):
        for i in group:
            labels[i] = label
    return labels


def test_average_linkage_merges_as_the_whole_matrix_search_does():
    """Same groups, ties included: small integer vectors (duplicates, zero rows, equal
    similarities everywhere), random ones, and 300 questions alike but for one word (every
    pair equally similar: each merge's mean equals the rows' best, which must not be
    searched again)."""
    rng = np.random.default_rng(7)
    for trial in range(600):
        size = int(rng.integers(1, 40)) if trial % 4 == 0 else int(rng.integers(3, 12))
        v = rng.integers(0, 3, size=(size, int(rng.integers(1, 5))))
        for threshold in (-1.0, 0.0, 0.3, 0.5, 0.7, 0.9, 1.0):
            assert average_linkage(v.astype(float), threshold) == _reference_average_linkage(
                v.astype(float), threshold
            )
    v = rng.normal(size=(200, 16))
    for threshold in (0.0, 0.2):
        assert average_linkage(v, threshold) == _reference_average_linkage(v, threshold)
    alike = tfidf([f"How many days for item {i}?" for i in range(300)])
    labels = average_linkage(alike, 0.1)
    assert labels == _reference_average_linkage(alike, 0.1) and set(labels) == {0}


def test_group_names_are_each_groups_name_against_the_rest():
    rng = np.random.default_rng(3)
    vocab = [f"topic{i}" for i in range(60)] + ["the", "what", "is"]
    texts = [" ".join(rng.choice(vocab, 6)) for _ in range(200)] + ["", "the what"]
    labels = average_linkage(tfidf(texts), 0.1)
    names = group_names(texts, labels)
    assert len(set(labels)) > 10 and sorted(names) == sorted(set(labels))
    for label, name in names.items():
        group = [t for t, g in zip(texts, labels, strict=True) if g == label]
        others = [t for t, g in zip(texts, labels, strict=True) if g != label]
        assert name == group_name(group, others)


def test_tfidf_rows_are_unit_vectors_and_names_are_distinctive_words():
    m = tfidf(["salary paid monthly", "salary paid", "pension match"])
    assert np.allclose(np.linalg.norm(m, axis=1), 1.0)
    assert m[0] @ m[1] > 0.5 and m[0] @ m[2] == 0
    name = group_name(["When is salary paid?", "Is salary paid monthly?"], ["How is pension paid?"])
    assert name.split(" · ")[0] == "salary"


def test_tfidf_groups_the_failing_topic_and_flags_it(monkeypatch):
    data = _data()
    spots, method = find_weak_spots(data, None, "TF-IDF of the questions")
    assert method == "TF-IDF of the questions"
    questions = [s for s in spots if s.kind == "questions"]
    # the payroll questions are exactly the payroll category: listed once, by its name
    assert not any(set(s.cases) == {"p1", "p2", "p3"} for s in questions)
    payroll = next(s for s in spots if set(s.cases) == {"p1", "p2", "p3"})
    assert payroll.kind == "category" and payroll.name == "payroll" and payroll.pass_rate == 0.0
    assert payroll.run_pass_rate == pytest.approx(4 / 8) and payroll.weak
    assert payroll.example_case == "p1" and payroll.example_reason == "Token F1: missing the date"
    # categories too, and the weakest group first
    assert spots[0].pass_rate == 0.0
    leave = next(s for s in spots if s.kind == "category" and s.name == "leave")
    assert leave.failing == ["l3"] and not leave.weak  # one failure only: not a weakness
    assert not any(s.name == "benefits" for s in spots)  # nothing failed there
    problems = weakness_problems(spots)
    assert {p.type for p in problems} == {"weakness"}
    assert any(
        set(p.affected_cases) == {"p1", "p2", "p3"} and p.severity == "high" for p in problems
    )


def test_the_same_run_gives_the_same_groups():
    first = find_weak_spots(_data(), None, "x")[0]
    assert find_weak_spots(_data(), None, "x")[0] == first


def test_nothing_failed_means_no_section():
    passing = [(c, cat, q, True) for c, cat, q, _ in CASES]
    assert find_weak_spots(_data(passing), None, "x") == ([], None)


def test_an_embedding_failure_falls_back_to_tfidf_and_says_so():
    def broken(texts):
        raise RuntimeError("no model here")

    spots, method = find_weak_spots(_data(), broken, "question embeddings of m")
    assert method is not None and method.startswith("TF-IDF") and "no model here" in method
    assert any(set(s.cases) == {"p1", "p2", "p3"} for s in spots)


def test_embeddings_only_when_the_run_loaded_the_model_unless_asked():
    embed, method = question_embedder([])
    assert embed is None and "TF-IDF" in method and MODE_ENV in method
    embed, method = question_embedder(["sentence-transformers/all-MiniLM-L6-v2"])
    assert embed is not None and "all-MiniLM-L6-v2" in method
    assert question_embedder(["sentence-transformers/all-MiniLM-L6-v2"], "tfidf")[0] is None
    embed, method = question_embedder([], "embeddings")
    assert embed is not None and "all-MiniLM-L6-v2" in method


def test_the_mode_comes_from_the_runs_settings_read_once(monkeypatch):
    monkeypatch.setenv(MODE_ENV, " OFF ")
    settings = Settings.from_env()
    monkeypatch.setenv(MODE_ENV, "embeddings")  # changed after: the run keeps what it read
    assert settings.weak_spots == "off" and not weak_spots_enabled(settings.weak_spots)
    assert Settings.from_env({}).weak_spots == "auto" and weak_spots_enabled("auto")
    assert ENV_WEAK_SPOTS == MODE_ENV  # the setting read is the one the notes name


def test_report_html_has_the_section_with_each_group():
    data = _data()
    spots, method = find_weak_spots(data, None, "TF-IDF of the questions")
    data = data.model_copy(update={"weak_spots": spots, "weak_spots_method": method})
    soup = BeautifulSoup(render_report(data), "html.parser")
    section = soup.find("section", id="weak-spots")
    assert section is not None and "TF-IDF of the questions" in section.get_text()
    rows = section.select("tbody tr")
    assert len(rows) == len(data.weak_spots)
    assert "weak" in rows[0].get("class", []) and "salary" in rows[0].get_text()
    assert soup.select_one('nav.toc a[href="#weak-spots"]') is not None


def test_alike_questions_group_without_any_category():
    data = _data([(c, "", q, ok) for c, _, q, ok in CASES])
    for row in data.rows:
        row.categories = []
    spots, _ = find_weak_spots(data, None, "TF-IDF of the questions")
    payroll = next(s for s in spots if set(s.cases) == {"p1", "p2", "p3"})
    assert payroll.kind == "questions" and "salary" in payroll.name.split(" · ")
    assert payroll.weak and all(s.kind == "questions" for s in spots)
