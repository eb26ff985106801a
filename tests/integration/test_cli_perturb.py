"""`evalrunner run --perturb typos:0.1 --perturb synonym` on the demo, offline, end to end in
the embedded engine; and a bad --perturb refused before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.demo.suite import demo_suite_path
from evalrunner.perturb import PerturbationSpec, perturb_text, resolve
from evalrunner.suite import read_suite_file

from .conftest import read_csv

pytestmark = pytest.mark.slow

runner = CliRunner()
DEMO = '{"lambdaArn": "evalrunner-demo-hr"}'


def run(out: Path, *extra: str):
    suite = str(demo_suite_path())
    args = ["run", "--suite", suite, "--target", DEMO, "--out", str(out), "--json", *extra]
    args += ["--fail-on", "errors"]  # the demo's failing cases are not what is tested here
    return runner.invoke(app, args, catch_exceptions=False)


def test_demo_with_typos_and_synonyms(tmp_path: Path) -> None:
    result = run(tmp_path, "--perturb", "typos:0.1", "--perturb", "synonym")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    typos, synonym = summary["robustness"]
    assert (typos["name"], typos["intensity"], typos["seed"]) == ("typos", 0.1, 0)
    assert (synonym["name"], synonym["intensity"]) == ("synonym", 1.0)
    # the demo's BM25 retrieval matches words exactly: typos break cases
    assert typos["broken"] > 0 and typos["score"] < 1
    assert typos["pass_to_fail"].get("Reciprocal rank", 0) > 0
    assert any(p["type"] == "robustness" for p in summary["problems"])

    rows = read_csv(tmp_path / summary["reports"]["details"])
    suite = read_suite_file(demo_suite_path())
    questions = {c.case_id: c.question for c in suite.cases}
    spec = resolve([PerturbationSpec(kind="typos", intensity=0.1)])[0]
    perturbed = [r for r in rows if r["perturbation"] == "typos"]
    assert len(perturbed) == typos["cases"] > 0
    for row in perturbed:  # the very text a fresh computation gives: nothing run-dependent
        original = questions[row["perturbation_of"]]
        assert row["original_question"] == original
        assert row["question"] == perturb_text(original, spec, row["perturbation_of"])
        assert row["case_id"] == f"{row['perturbation_of']}~typos"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("typos:lots", "the intensity must be a number"),
        ("typo", "unknown kind 'typo'"),
        ("typos:2", "perturbations.0.intensity: 2.0 is greater than the maximum of 1"),
    ],
)
def test_a_bad_perturb_exits_2_and_writes_nothing(
    tmp_path: Path, value: str, expected: str
) -> None:
    result = run(tmp_path / "out", "--perturb", value)
    assert result.exit_code == 2
    assert expected in result.output
    assert not (tmp_path / "out").exists()


def test_perturbations_command_lists_every_kind_with_an_example() -> None:
    result = runner.invoke(app, ["perturbations"], catch_exceptions=False)
    assert result.exit_code == 0
    from evalrunner.perturb import KINDS

    for kind in KINDS:
        assert kind in result.output
    assert "yearly" in result.output  # the synonym example
