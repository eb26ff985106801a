"""Weak spots: where in the suite the target fails, as named groups of cases.

Rules (the README repeats them):

* A case's **pass share** is over its scored results of primary metrics, every iteration
  (skipped and errored results count in neither: a target error is a problem of its own).
  The run's pass rate is the same share over every case.
* **Question groups**: the questions of every scored case are clustered (average linkage on
  cosine similarity, :mod:`.clustering`) on question embeddings of the run's embedding model,
  or on TF-IDF when that model is not at hand; ``weak_spots_method`` says which. A group is
  reported when it has at least :data:`MIN_CASES` cases and one of them failed.
* **Category groups**: every suite category (a generated suite's ``topic:...`` included) with
  at least :data:`MIN_CASES` cases and a failure. A question group with exactly the cases of
  a category group is left out (the category's name is the user's own).
* A group is **weak** — a problem of type ``weakness`` — when its pass rate is at least
  :data:`WEAK_GAP` below the run's and at least two of its cases failed: **high** from
  :data:`HIGH_GAP` below, else **medium**.
* Named by the group's most distinctive question words (categories by their name); the
  example is the group's worst case (lowest pass share, then first in the suite).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from evalrunner.reports.analysis.clustering import (
    MAX_TEXTS,
    Embed,
    average_linkage,
    group_names,
    tfidf,
)
from evalrunner.reports.model import CaseRow, Problem, ReportData, WeakSpot

if TYPE_CHECKING:
    from evalrunner.models import ModelSettings

logger = logging.getLogger(__name__)

MIN_CASES = 2
WEAK_GAP = 0.15
HIGH_GAP = 0.30
#: Cosine similarity at which two groups of questions merge, per kind of vector: sentence
#: embeddings of related questions sit higher than TF-IDF vectors, which share only words.
EMBEDDING_SIMILARITY = 0.4
TFIDF_SIMILARITY = 0.1
#: ``auto`` (embeddings when the run's Score step loaded the embedding model, else TF-IDF),
#: ``embeddings``, ``tfidf`` or ``off``.
MODE_ENV = "EVALRUNNER_WEAK_SPOTS"

Kind = Literal["questions", "category"]


@dataclass
class _Case:
    case_id: str
    question: str
    categories: list[str]
    passed: int = 0
    scored: int = 0
    reason: str | None = None

    @property
    def share(self) -> float:
        return self.passed / self.scored


def _cases(data: ReportData) -> list[_Case]:
    primary = {m.metric for m in data.metrics if m.primary}
    cases: dict[str, _Case] = {}
    for row in data.rows:
        case = cases.setdefault(row.case_id, _Case(row.case_id, row.question, row.categories))
        _count(case, row, primary)
    return [c for c in cases.values() if c.scored]


def _count(case: _Case, row: CaseRow, primary: set[str]) -> None:
    for result in row.results:
        if result.metric in primary and result.status == "scored" and result.score is not None:
            case.scored += 1
            if result.success:
                case.passed += 1
            elif case.reason is None:
                case.reason = f"{result.metric}: {result.reason}"


def _spot(name: str, kind: Kind, group: Sequence[_Case], run_rate: float) -> WeakSpot | None:
    failing = [c.case_id for c in group if c.passed < c.scored]
    if len(group) < MIN_CASES or not failing:
        return None
    rate = sum(c.passed for c in group) / sum(c.scored for c in group)
    worst = min(group, key=lambda c: c.share)  # first in suite order on ties
    return WeakSpot(
        name=name,
        kind=kind,
        cases=[c.case_id for c in group],
        failing=failing,
        pass_rate=rate,
        run_pass_rate=run_rate,
        example_case=worst.case_id,
        example_question=worst.question,
        example_reason=worst.reason,
        weak=run_rate - rate >= WEAK_GAP and len(failing) >= 2,
    )


def find_weak_spots(
    data: ReportData, embed: Embed | None, method: str
) -> tuple[list[WeakSpot], str | None]:
    """The run's weak spots, weakest first, and the method used (None: nothing failed)."""
    cases = _cases(data)[:MAX_TEXTS]
    if not any(c.passed < c.scored for c in cases):
        return [], None
    run_rate = sum(c.passed for c in cases) / sum(c.scored for c in cases)
    questions = [c.question for c in cases]
    vectors, similarity = None, TFIDF_SIMILARITY
    if embed is not None:
        try:
            vectors, similarity = embed(questions), EMBEDDING_SIMILARITY
        except Exception as exc:  # a missing model (or a model failure) must not cost the reports
            logger.warning("weak spots: no question embeddings (%s); using TF-IDF", exc)
            method = f"TF-IDF of the questions (no embeddings: {exc})"[:300]
    if vectors is None:
        vectors = tfidf(questions)
    labels = average_linkage(vectors, similarity)
    groups: dict[int, list[_Case]] = defaultdict(list)
    for case, label in zip(cases, labels, strict=True):
        groups[label].append(case)
    names = group_names(questions, labels)
    spots: list[WeakSpot] = []
    for label in sorted(groups):
        spot = _spot(names[label], "questions", groups[label], run_rate)
        if spot:
            spots.append(spot)
    by_category: dict[str, list[_Case]] = defaultdict(list)
    for case in cases:
        for category in dict.fromkeys(case.categories):
            by_category[category].append(case)
    for category in sorted(by_category):
        spot = _spot(category, "category", by_category[category], run_rate)
        if spot:
            spots.append(spot)
    # a question group with exactly a category's cases says nothing new: the category's
    # name is the user's own, so it stays
    categories = {frozenset(s.cases) for s in spots if s.kind == "category"}
    spots = [s for s in spots if s.kind == "category" or frozenset(s.cases) not in categories]
    spots.sort(key=lambda s: (s.pass_rate, -len(s.failing), s.kind, s.name))
    return spots, method


def weakness_problems(spots: Sequence[WeakSpot]) -> list[Problem]:
    """One problem per weak group, most severe first."""
    problems: list[Problem] = []
    for spot in spots:
        if not spot.weak:
            continue
        gap = spot.run_pass_rate - spot.pass_rate
        what = (
            f"questions like {spot.name!r}"
            if spot.kind == "questions"
            else f"category {spot.name!r}"
        )
        problems.append(
            Problem(
                severity="high" if gap >= HIGH_GAP else "medium",
                type="weakness",
                description=(
                    f"Weak spot: {what} ({len(spot.cases)} cases, {len(spot.failing)} failing) "
                    f"pass {spot.pass_rate:.0%} of primary checks against {spot.run_pass_rate:.0%} "
                    f"for the run; e.g. {spot.example_case}: {spot.example_question[:120]!r}"
                ),
                affected_cases=spot.failing,
                suggested_action=(
                    "look at these cases together: a missing or badly chunked document, a "
                    "retrieval gap or a prompt rule the topic needs; add cases there"
                ),
            )
        )
    return sorted(problems, key=lambda p: p.severity != "high")


def question_embedder(
    models_used: Sequence[str], mode: str = "auto", models: ModelSettings | None = None
) -> tuple[Embed | None, str]:
    """The embedder for the run's questions and the method's description. ``mode`` (the
    run's settings: :data:`MODE_ENV`, read once): ``auto`` uses the embedding model only
    when the run's Score step already loaded it (so a run of lexical metrics never pays for
    loading a model); the Aggregate Lambda carries no model code and falls back to TF-IDF,
    saying so. ``models``: the run's model settings (its embedding default; None: this
    process's environment now)."""
    from evalrunner.models import ModelRole, ModelSettings

    name = (models or ModelSettings.from_env()).default_model(ModelRole.EMBEDDING)
    tfidf_method = "TF-IDF of the questions"
    if mode == "tfidf":
        return None, tfidf_method
    if mode == "auto" and name not in models_used:
        return None, (
            f"{tfidf_method} (the run loaded no embedding model; {MODE_ENV}=embeddings uses {name})"
        )

    def embed(texts: Sequence[str]) -> Any:
        # loaded on first use: a run where nothing failed never loads it
        from evalrunner.models.hub import tool_encoder

        return tool_encoder(name).embed(texts)

    return embed, f"question embeddings of {name}"


def weak_spots_enabled(mode: str = "auto") -> bool:
    """Whether ``mode`` (the run's :data:`MODE_ENV` setting) looks for weak spots."""
    return mode != "off"
