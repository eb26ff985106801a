"""Scoring one answer: the sample evaluators see (every text capped to the run's
``max_text_chars``), the response as the record keeps it (capped and sanitized), and
:func:`answer_and_score`, which gets an answer and scores it into a record.

Shared by a single-turn case (:mod:`evalrunner.pipeline.run_case`) and each turn of a
scripted conversation (:mod:`evalrunner.pipeline.conversations`), and the samples by the
steps that score without a target call (Prepare's checks, Score, Aggregate): one module
below both, so neither of the two steps imports the other.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from evalrunner.errors import TargetError
from evalrunner.evaluators import Evaluator, MetricResult, Sample
from evalrunner.judge.base import CURRENT_CASE, CaseUsage
from evalrunner.pipeline.context import RunContext
from evalrunner.run import CaseRecord
from evalrunner.sanitize import (
    DEFAULT_MAX_TEXT_CHARS,
    cap_text,
    is_clean,
    sanitize_text,
    sanitize_value,
)
from evalrunner.suite.model import TestCase, Turn
from evalrunner.targets.base import Target, TargetResponse


def sample_of(
    case: TestCase,
    response: TargetResponse | None = None,
    max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
) -> Sample:
    """What evaluators see; without a response, only the case's own inputs (for checks)."""
    return capped_sample(case, response, max_text_chars)[0]


def capped_sample(
    case: TestCase, response: TargetResponse | None, max_text_chars: int
) -> tuple[Sample, list[str]]:
    """The sample with every text cut to ``max_text_chars``, and a note per text that was.

    The one place evaluators' input is bounded: per-case, batched and aggregate evaluators
    all get their samples here, so a 5 MB answer costs each of them 100k characters at most.
    """
    notes: list[str] = []

    def cap(where: str, text: str | None) -> str | None:
        if text is None:
            return None
        kept, cut = cap_text(text, max_text_chars)
        if cut:
            notes.append(
                f"truncated: {where} has {len(text):,} characters; evaluators examined the "
                f"first {max_text_chars:,} (the run's max_text_chars)"
            )
        return kept

    def caps(where: str, texts: list[str]) -> list[str]:
        return [cap(f"{where}[{i}]", t) or "" for i, t in enumerate(texts)]

    sample = Sample(
        question=cap("question", case.question) or "",
        case_id=case.case_id,
        metadata=case.metadata,
        expected_answer=cap("expected_answer", case.expected_answer),
        expected_contexts=caps("expected_contexts", case.expected_contexts),
        expected_intent=case.expected_intent,
        expected_tool=case.expected_tool,
        expected_documents=case.expected_documents,
        expected_tools=case.expected_tools,
        expected_steps=case.expected_steps,
        expected_data=case.expected_data,
        condition=case.condition,
        categories=case.categories,
        answer=cap("answer", response.answer) if response else None,
        contexts=caps("contexts", response.contexts) if response else [],
        documents=response.documents if response else [],
        tool=response.tool if response else None,
        steps=response.steps if response else [],
        intent=response.intent if response else None,
        data=response.data if response else None,
        false_fact=case.perturbation.false_fact if case.perturbation else None,
        # a conversation before it is played: its user turns (run_conversation gives the
        # conversational evaluators the turns as they happened)
        turns=[Turn(role="user", content=t.question) for t in case.turns],
    )
    return sample, notes


def capped_response(
    response: TargetResponse, max_text_chars: int
) -> tuple[TargetResponse, list[str]]:
    """The response with its answer and each context cut to ``max_text_chars``, and a note
    per text that was. The record and every report keep what the evaluators examined, so a
    huge answer costs no more downstream (CSV, xlsx, HTML, JSON) than the cap."""
    notes: list[str] = []

    def cap(where: str, text: str) -> str:
        kept, cut = cap_text(text, max_text_chars)
        if cut:
            notes.append(
                f"truncated: {where} has {len(text):,} characters; the first "
                f"{max_text_chars:,} were kept and evaluated (the run's max_text_chars)"
            )
        return kept

    answer = cap("answer", response.answer)
    contexts = [cap(f"contexts[{i}]", c) for i, c in enumerate(response.contexts)]
    if not notes:
        return response, notes
    return response.model_copy(update={"answer": answer, "contexts": contexts}), notes


def sanitized_response(response: TargetResponse) -> tuple[TargetResponse, list[str]]:
    """The response with its text cleaned (see :mod:`evalrunner.sanitize`) and a note per
    field that had characters replaced. Every answer passes here, a target's or a
    precomputed test-lab one, so the record can always be stored and reported."""
    data = response.model_dump()
    if is_clean(data):  # nearly every answer: one scan of its text, nothing copied
        return response, []
    notes: list[str] = []
    for name, value in data.items():
        if not value or not isinstance(value, str | list | dict):
            continue  # no text in it (None, a number, an empty list): nothing to clean
        cleaned, found = sanitize_value(value)
        if found:
            data[name] = cleaned
            notes.append(found.describe(name))
    return (TargetResponse.model_validate(data) if notes else response), notes


def not_scored(evaluators: list[Evaluator], reason: str) -> list[MetricResult]:
    """Error results for every metric of a case that produced no answer."""
    return [
        MetricResult(
            evaluator=e.name,
            metric=m.name,
            status="error",
            threshold=e.threshold(m.name),
            reason=reason,
        )
        for e in evaluators
        for m in e.metrics
    ]


def call_target(
    target: Target, case: TestCase, clock: Callable[[], float] = time.perf_counter
) -> tuple[TargetResponse, float]:
    """The target's answer and its latency in ms (the target's own figure when it reports
    one, else the time the call took)."""
    start = clock()
    response = target.invoke(case)
    elapsed_ms = (clock() - start) * 1000
    return response, response.latency_ms if response.latency_ms is not None else elapsed_ms


def evaluate_all(evaluators: list[Evaluator], sample: Sample) -> list[MetricResult]:
    """Every evaluator's results for ``sample``, in evaluator order.

    The evaluators that ask the judge run together, each in its own thread (with this
    thread's context: the case's judge accounting): their first asks do not depend on one
    another (the answer's statements, the expected answer's, each chunk's verdicts), so a case
    waits for its longest chain of dependent calls (statements, then their verdicts: two
    rounds) instead of the sum of all its calls one after another (five to seven rounds for
    the five RAG metrics). The judge's limiter still bounds the calls in flight, and
    identical asks of the case (Faithfulness's and Answer Relevancy's statements) still share
    one call. The other evaluators run here, meanwhile, as before."""
    judged = [e for e in evaluators if e.asks_judge]
    if len(judged) < 2:
        return [r for e in evaluators for r in e.evaluate(sample)]
    with ThreadPoolExecutor(len(judged), thread_name_prefix="case-judge") as pool:
        pending: dict[int, Future[list[MetricResult]]] = {
            id(e): pool.submit(contextvars.copy_context().run, e.evaluate, sample) for e in judged
        }
        here = {id(e): e.evaluate(sample) for e in evaluators if id(e) not in pending}
        return [
            r
            for e in evaluators
            for r in (pending[id(e)].result() if id(e) in pending else here[id(e)])
        ]


def answer_and_score(
    context: RunContext,
    case: TestCase,
    record: CaseRecord,
    evaluators: list[Evaluator],
    ask: Callable[[], tuple[TargetResponse, float | None]],
    usage: CaseUsage,
) -> None:
    """Get the case's answer from ``ask`` and score it into ``record``: a target error is
    recorded (every metric not scored), never raised. One case, or one turn of a
    conversation; the judge's calls are counted in ``usage``."""
    config = context.config
    record.notes, record.sanitized = list(case.notes), bool(case.notes)
    try:
        if case.perturbation is not None and case.perturbation.error:
            # Nothing was perturbed: asking the target would test the original again.
            raise TargetError(f"not perturbed: {case.perturbation.error}")
        response, latency = ask()
        response, truncated = capped_response(response, config.max_text_chars)
        response, sanitized = sanitized_response(response)
    except TargetError as exc:
        record.status, record.error = "target_error", exc.message
    except Exception as exc:  # a target bug must not lose the case
        record.status, record.error = "target_error", f"{type(exc).__name__}: {exc}"
    else:
        record.response, record.latency_ms = response, latency
        record.notes += sanitized
        record.sanitized = bool(record.notes)
        record.notes += response.notes  # target-reported numbers that were ignored
        sample, cut = capped_sample(case, response, config.max_text_chars)
        record.notes += truncated + cut
        record.truncated = bool(truncated or cut)
        token = CURRENT_CASE.set(usage)
        try:
            record.results = evaluate_all(evaluators, sample)
        finally:
            CURRENT_CASE.reset(token)

    if record.status != "ok":
        record.results = not_scored(evaluators, "not scored: the target call failed")
    if record.error:  # it may quote the target's text
        record.error = sanitize_text(record.error)[0]
