"""Numbers that are not numbers: NaN and Infinity in events and in what targets report.

Refused where a user typed them (event, CLI options), dropped and noted where a target sent
them, and never written to a report: every JSON the run writes is strict JSON.
"""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.errors import EventError
from evalrunner.event import parse_event
from evalrunner.jsonout import dump_json
from evalrunner.pipeline import aggregate, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import ManifestItem
from evalrunner.targets.adapters import normalise
from evalrunner.targets.base import Target, TargetResponse
from tests.unit.pipeline.test_pipeline_steps import NOW, prepared, store  # noqa: F401  (fixture)


def strict_loads(text: str | bytes):
    """json.loads that refuses NaN / Infinity, as every other JSON reader does."""

    def refuse(name: str):
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


def event(**extra):
    return {
        "key": "test-suites/s.csv",
        "iterations": 1,
        "target": {"lambdaArn": "fn"},
        "metrics": ["Rouge Metric", "Perplexity"],
        **extra,
    }


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("field", ["thresholds", "fail_under"])
def test_non_finite_thresholds_and_gates_are_refused(field, bad):
    with pytest.raises(EventError) as err:
        parse_event(event(**{field: {"ROUGE-L": bad}}))
    assert f"{field}.ROUGE-L: {bad} is not a finite number" in err.value.message


@pytest.mark.parametrize(
    "field,name,value,expected",
    [
        (
            "fail_under",
            "Rouge Metric",
            1.5,
            "fail_under.Rouge Metric: 1.5 is outside the range "
            "of ROUGE-L; give a value between 0 and 1",
        ),
        (
            "thresholds",
            "ROUGE-1",
            -0.1,
            "thresholds.ROUGE-1: -0.1 is outside the range of "
            "ROUGE-1; give a value between 0 and 1",
        ),
        (
            "thresholds",
            "Perplexity",
            0.5,
            "thresholds.Perplexity: 0.5 is outside the range of "
            "Perplexity; give a value between 1 and 1e+06",
        ),
    ],
)
def test_out_of_range_thresholds_and_gates_name_the_field_and_the_range(
    field, name, value, expected
):
    with pytest.raises(EventError) as err:
        parse_event(event(**{field: {name: value}}))
    assert expected in err.value.message


def test_in_range_values_at_the_edges_are_accepted():
    parsed = parse_event(
        event(thresholds={"ROUGE-L": 0, "Perplexity": 1e6}, fail_under={"ROUGE-2": 1})
    )
    assert parsed.thresholds == {"ROUGE-L": 0, "Perplexity": 1e6}


def test_non_finite_numbers_anywhere_in_the_event_are_refused():
    with pytest.raises(EventError, match=r"target\.timeout_seconds: inf is not a finite number"):
        parse_event(event(target={"lambdaArn": "fn", "timeout_seconds": math.inf}))


def test_validate_refuses_a_nan_literal_in_the_event_file(tmp_path):
    path = tmp_path / "ev.json"
    path.write_text(
        '{"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "fn"},'
        ' "metrics": ["Rouge Metric"], "fail_under": {"ROUGE-L": NaN}}',
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "fail_under.ROUGE-L: nan is not a finite number" in result.stderr


@pytest.mark.parametrize(
    "option,value,expected",
    [
        ("--fail-under", "ROUGE-L=nan", "finite number"),
        ("--threshold", "ROUGE-L=inf", "finite number"),
        ("--fail-under", "ROUGE-L=-Infinity", "finite number"),
        ("--fail-under", "Rouge Metric=2", "give a value between 0 and 1"),
    ],
)
def test_cli_refuses_non_finite_and_out_of_range_before_anything_runs(
    tmp_path, option, value, expected
):
    suite = tmp_path / "s.csv"
    suite.write_text("question,expected_answer\nQ?,A\n", encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--suite",
            str(suite),
            "--target",
            '{"url": "http://127.0.0.1:9/x"}',
            "--metric",
            "Rouge Metric",
            option,
            value,
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 2, result.output
    assert (expected in result.stderr and option in result.stderr) or "fail_under" in result.stderr
    assert not out.exists()


def test_target_reported_numbers_are_distrusted_and_noted():
    response = normalise(
        {
            "answer": "ok",
            "cost": math.inf,
            "latency_ms": -5,
            "usage": {"input_tokens": math.nan, "output_tokens": 1e12},
        }
    )
    assert response.answer == "ok"
    assert (response.cost, response.latency_ms) == (None, None)
    assert (response.input_tokens, response.output_tokens) == (None, None)
    assert response.notes == [
        "the target reported latency_ms -5 is negative: ignored",
        "the target reported input_tokens nan is not finite: ignored",
        "the target reported output_tokens 1e+12 is above 1e+09: ignored",
        "the target reported cost inf is not finite: ignored",
    ]
    sane = normalise({"answer": "ok", "cost": 0.002, "usage": {"input_tokens": 12.0}})
    assert sane.cost == 0.002 and sane.input_tokens == 12 and sane.notes == []


def test_json_text_with_infinity_from_a_target_is_distrusted():
    response = normalise('{"answer": "ok", "cost": Infinity, "latency_ms": NaN}')
    assert response.cost is None and response.latency_ms is None and len(response.notes) == 2


def test_dump_json_is_strict_and_never_writes_nan():
    assert dump_json({"a": 1.5, "b": [1, None]}) == '{"a":1.5,"b":[1,null]}'
    text = dump_json({"a": math.nan, "b": [math.inf, {"c": -math.inf}], "d": "x"})
    assert strict_loads(text) == {"a": None, "b": [None, {"c": None}], "d": "x"}


def hostile_numbers(spec, *, session=None):
    return HostileNumbers(spec)


class HostileNumbers(Target):
    """A target whose usage numbers are garbage (bypassing the adapter's normalisation)."""

    kind = "lambdaArn"

    @property
    def name(self) -> str:
        return "hostile"

    def invoke(self, case):
        return TargetResponse.model_validate(
            {
                "answer": "alpha beta",
                "latency_ms": -1.0 if case.case_id == "a" else math.inf,
                "cost": math.inf,
                "input_tokens": -3,
                "output_tokens": math.nan,
            }
        )


def test_a_run_with_hostile_numbers_writes_valid_json_and_notes_the_cases(store, monkeypatch):  # noqa: F811
    prepared(store, run_id="rn", metrics=["Exact match"])
    for item in store.get_json(store.manifest_key("rn")):
        run_case.run_case(
            RunContext.load(store, "rn", target_factory=lambda spec, session: HostileNumbers(spec)),
            ManifestItem.model_validate(item),
        )
    summary = aggregate.aggregate_run(RunContext.load(store, "rn"), now=NOW)
    reports = summary.reports
    for key in (reports.summary, reports.insights, reports.problems, reports.report):
        strict_loads(store.get_bytes(key))  # raises on NaN / Infinity
    rows = list(csv.DictReader(io.StringIO(store.get_bytes(reports.details).decode("utf-8-sig"))))
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    assert all("cost inf is not finite: ignored" in r["notes"] for r in rows)
    # the measured latency replaces the reported one: finite, non-negative
    assert all(float(r["latency_ms"]) >= 0 for r in rows)
    record = store.get_json(store.record_key("rn", "c00001-i1"))
    assert record["response"]["cost"] is None and record["response"]["notes"]
