"""Text matching: the condition on the answer and on the context, each failure type."""

import time

import pytest
from pydantic import ValidationError

from evalrunner.evaluators import Sample, resolve
from evalrunner.evaluators.text_matching import TextMatching
from tests.support.scaling import BACKSTOP_SECONDS

EXAMPLE = '("Brazil" OR "brazil") AND regexp("15,?969 [Mm]illion") AND NOT "Real"'
GOOD = "Brazil spent 15,969 million on it."
BAD = "It spent a lot."


def sample(answer, contexts=(), condition=EXAMPLE, **fields):
    return Sample(
        question="q", answer=answer, contexts=list(contexts), condition=condition, **fields
    )


def run(s, **options):
    return {r.metric: r for r in resolve("Text matching")({}, options).evaluate(s)}


def values(results):
    return {m: r.score for m, r in results.items()}


def test_pass_on_answer_and_context():
    r = run(sample(GOOD, ["Report: brazil 15969 Million in total."]))
    assert values(r) == {
        "Model passes": 1.0,
        "Model failures": 0.0,
        "Retrieval failures": 0.0,
        "Generation failures": 0.0,
        "Parse failures": 0.0,
    }
    assert all(x.success for x in r.values())
    assert 'contains "Brazil"' in r["Model passes"].reason
    assert "1 chunk" in r["Retrieval failures"].reason


def test_generation_failure_when_context_has_it_and_answer_lost_it():
    r = run(sample(BAD, ["intro", "Brazil: 15,969 million"]))
    assert r["Model passes"].score == 0.0 and r["Model passes"].success is False
    assert r["Model failures"].score == 1.0 and r["Model failures"].success is False
    assert r["Retrieval failures"].score == 0.0
    assert r["Generation failures"].score == 1.0 and r["Generation failures"].success is False
    assert 'none of "Brazil" | "brazil" holds' in r["Generation failures"].reason
    assert r["Parse failures"].score == 0.0


def test_retrieval_failure_when_neither_has_it():
    r = run(sample(BAD, ["Chile: 12 million"]))
    assert r["Retrieval failures"].score == 1.0
    assert r["Generation failures"].score == 0.0
    assert "context fails too" in r["Generation failures"].reason
    assert r["Model failures"].score == 1.0


def test_answer_passes_though_context_fails():
    r = run(sample(GOOD, ["Brazil: 15,969 million, paid in Real"]))
    assert r["Model passes"].score == 1.0
    assert r["Retrieval failures"].score == 1.0
    assert 'contains "Real" (excluded by NOT)' in r["Retrieval failures"].reason
    assert r["Generation failures"].score == 0.0


def test_no_context_counts_as_a_retrieval_failure_and_says_so():
    r = run(sample(GOOD, []))
    assert r["Retrieval failures"].score == 1.0
    assert "no retrieved context" in r["Retrieval failures"].reason
    assert r["Generation failures"].score == 0.0
    assert run(sample(GOOD, ["  ", ""]))["Retrieval failures"].score == 1.0


def test_list_form_reason_names_the_failing_item():
    r = run(sample("40 dollars", ["40 EUR"], condition=["40", ["EUR", "euro"]]))
    assert (
        r["Model passes"].reason
        == 'the answer fails the condition: item [1]: none of "EUR" | "euro" holds'
    )
    assert r["Generation failures"].score == 1.0


def test_regex_timeout_is_a_parse_failure_not_a_hang():
    evil = "a" * 5000 + "b"
    start = time.monotonic()
    r = run(sample(evil, [evil], condition=["REGEXP:(a+)+$"]))
    # Without the timeout this match never ends; a generous bound cannot flake under load.
    assert time.monotonic() - start < BACKSTOP_SECONDS
    assert r["Parse failures"].score == 1.0 and r["Parse failures"].success is False
    assert "timed out on the answer" in r["Parse failures"].reason
    assert "on the context" in r["Parse failures"].reason
    assert r["Model passes"].score == 0.0 and r["Model failures"].score == 0.0
    assert r["Retrieval failures"].score == 0.0 and r["Generation failures"].score == 0.0


def test_timeout_on_context_only():
    r = run(sample("aaa", ["a" * 5000 + "b"], condition='regexp("(a+)+$")'))
    assert r["Model passes"].score == 1.0
    assert r["Parse failures"].score == 1.0
    assert r["Retrieval failures"].reason.startswith("undecided")


def test_skips_without_condition_and_scores_an_empty_answer():
    r = run(sample(GOOD, condition=None))
    assert all(x.status == "skipped" for x in r.values())
    assert "no condition" in r["Model passes"].reason
    empty = run(sample("", ["Brazil 15,969 million"]))
    assert empty["Model passes"].status == "scored" and empty["Model passes"].score == 0.0
    assert empty["Generation failures"].score == 1.0


def test_alias_and_threshold_override():
    assert resolve("Tokens presence") is TextMatching
    r = resolve("tokens-presence")({"Model passes": 1.0}).evaluate(sample(GOOD))
    assert r[0].metric == "Model passes" and r[0].threshold == 1.0 and r[0].success


def test_check_case_reports_condition_errors_with_position():
    assert TextMatching.check_case(sample(None, condition='"a" AND ("b"')) == [
        "condition: unbalanced '(': no matching ')' at position 8"
    ]
    (problem,) = TextMatching.check_case(sample(None, condition=["a", ["REGEXP:["]]))
    assert problem.startswith('condition: invalid regexp "[": ')
    assert problem.endswith(" at item [1][0]")
    assert TextMatching.check_case(sample(None, condition=EXAMPLE)) == []
    assert TextMatching.check_case(sample(None, condition=None)) == []


def test_unparseable_condition_at_score_time_is_an_error_result():
    r = run(sample(GOOD, condition='"a" AND'))
    assert all(x.status == "error" for x in r.values())
    assert "missing operand" in r["Model passes"].reason


def test_options_are_validated():
    with pytest.raises(ValidationError):
        TextMatching({}, {"regex_timeout_s": 0})
    with pytest.raises(ValidationError):
        TextMatching({}, {"unknown": 1})
