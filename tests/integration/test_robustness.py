"""Robustness end to end in the embedded engine: the real state machine runs the perturbed
cases Prepare put in the manifest, and the reports say which verdicts flipped.

The target is brittle to typos on purpose: it looks its answer up by the exact words of the
question (punctuation ignored), so a typo loses the answer and a comma does not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalrunner.engine import LocalEngine
from evalrunner.perturb import PerturbationSpec, perturb_text, resolve
from lambdas.local import local_pipeline

from .conftest import read_csv

pytestmark = pytest.mark.slow

CASES = {
    "leave": (
        "How many days of annual leave do employees get?",
        "Employees get 25 days of annual leave.",
    ),
    "pension": (
        "What is the pension match for employees?",
        "The company matches pension contributions up to 6%.",
    ),
    "remote": (
        "How many days per week can I work remotely?",
        "You can work remotely two days per week.",
    ),
}
# and a hand-written variant of "leave", linked by the variant_of column
SUITE = (
    "id,question,expected_answer,variant_of,variant_kind\n"
    + "".join(f"{case},{q},{a},,\n" for case, (q, a) in CASES.items())
    + (
        "leave-typed,How many dyas of annual leave do employees get?,"
        "Employees get 25 days of annual leave.,leave,typed by hand\n"
    )
)

ANSWERS = {tuple(re.findall(r"[a-z0-9]+", q.lower())): a for q, a in CASES.values()}


def keyword_lookup(event, context):
    """An exact keyword lookup: the question's words, lower-cased, punctuation dropped."""
    words = tuple(re.findall(r"[a-z0-9]+", event["question"].lower()))
    return {"answer": ANSWERS.get(words, "I do not know."), "contexts": ["policy"]}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("out")
    suite = tmp_path_factory.mktemp("suite") / "robust.csv"
    suite.write_text(SUITE, encoding="utf-8")
    event = {
        "key": "test-suites/robust.csv",
        "iterations": 1,
        "target": {"lambdaArn": "keyword-lookup"},
        "metrics": ["Exact match"],
        "perturbations": [{"kind": "typos", "intensity": 0.1, "seed": 7}, {"kind": "comma"}],
    }
    engine = LocalEngine(
        pipeline=local_pipeline, extra_functions={"keyword-lookup": keyword_lookup}
    )
    result = engine.run(event, suite=suite, out_dir=out)
    return result, out


def report_file(run, name: str) -> Path:
    result, out = run
    return out / getattr(result.summary.reports, name)


def test_typos_flip_the_brittle_target_and_commas_do_not(run) -> None:
    summary = run[0].summary
    assert summary.cases == 4 and summary.items == 10  # the cases, two copies of 3 originals
    typos, comma, typed = summary.robustness
    assert (typos.name, typos.compared, typos.held, typos.broken, typos.score) == (
        "typos",
        3,
        0,
        3,
        0.0,
    )
    assert typos.pass_to_fail == {"Exact match": 3}
    assert (comma.name, comma.compared, comma.held, comma.broken, comma.score) == (
        "comma",
        3,
        3,
        0,
        1.0,
    )
    assert (typed.name, typed.kind, typed.compared, typed.broken) == (
        "typed by hand",
        "variant",
        1,
        1,
    )
    # the suite's own cases are measured as before: perturbed copies do not move the averages
    (exact,) = [m for m in summary.metrics if m.metric == "Exact match"]
    assert (exact.average, exact.count) == (1.0, 3)


def test_the_problem_names_the_flipped_cases(run) -> None:
    problems = json.loads(report_file(run, "problems").read_text("utf-8"))
    robustness = [p for p in problems if p["type"] == "robustness"]
    assert len(robustness) == 2  # typos and the hand-written variant; none for commas
    problem = next(p for p in robustness if "typos" in p["description"])
    assert problem["severity"] == "high"
    assert problem["affected_cases"] == ["leave", "pension", "remote"]
    assert "Not robust to typos (intensity 0.1)" in problem["description"]
    assert "Exact match (3)" in problem["description"]


def test_details_carry_the_perturbed_rows_linked_to_their_originals(run) -> None:
    rows = read_csv(report_file(run, "details"))
    assert [r["case_id"] for r in rows] == [
        "leave",
        "leave~typos",
        "leave~comma",
        "pension",
        "pension~typos",
        "pension~comma",
        "remote",
        "remote~typos",
        "remote~comma",
        "leave-typed",
    ]
    typo = rows[1]
    spec = resolve([PerturbationSpec(kind="typos", intensity=0.1, seed=7)])[0]
    original = "How many days of annual leave do employees get?"
    assert typo["question"] == perturb_text(original, spec, "leave") != original
    assert (typo["perturbation_of"], typo["perturbation"], typo["perturbation_kind"]) == (
        "leave",
        "typos",
        "typos",
    )
    assert (typo["intensity"], typo["seed"], typo["original_question"]) == ("0.1000", "7", original)
    assert typo["answer"] == "I do not know." and typo["Exact match success"] == "false"
    assert rows[2]["answer"] == rows[0]["answer"]  # the comma copy got the same answer
    typed = rows[-1]
    assert (typed["perturbation_of"], typed["perturbation"], typed["perturbation_kind"]) == (
        "leave",
        "typed by hand",
        "variant",
    )


def test_report_json_and_html_hold_the_flips(run) -> None:
    data = json.loads(report_file(run, "report").read_text("utf-8"))
    typos = data["robustness"][0]
    assert typos["broken_cases"] == ["leave", "pension", "remote"]
    assert [f["perturbed_case_id"] for f in typos["flips"]] == [
        "leave~typos",
        "pension~typos",
        "remote~typos",
    ]
    html = report_file(run, "html").read_text("utf-8")
    section = html[html.index('id="robustness"') : html.index('id="distributions"')]
    assert "How many days of annual leave do employees get?" in section
    assert "I do not know." in section and "Employees get 25 days of annual leave." in section


def test_the_report_shows_the_perturbations_it_ran(run) -> None:
    data = json.loads(report_file(run, "report").read_text("utf-8"))
    assert [(p["kind"], p["intensity"], p["seed"]) for p in data["config"]["perturbations"]] == [
        ("typos", 0.1, 7),
        ("comma", 0.2, 0),
    ]
