"""Prepare, run_case, score and aggregate on an embedded S3, without the state machine."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import ClassVar

import pytest

from evalrunner.errors import SuiteError
from evalrunner.evaluators import (
    BatchEvaluator,
    Input,
    MetricResult,
    MetricSpec,
    Sample,
    Scored,
    registry,
)
from evalrunner.event import read_event
from evalrunner.judge.config import JudgeConfig
from evalrunner.pipeline import aggregate, merge, prepare, run_case, score
from evalrunner.pipeline.context import RunContext
from evalrunner.reports.summary import MAX_OUTPUT_BYTES, fit_output
from evalrunner.reports.writers.csv_writer import neutralise, to_csv
from evalrunner.run import ManifestItem, RunConfig, StepFailure
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.lambda_function import LambdaSpec
from tests.support.suite_bucket import suite_store
from tests.support.summaries import metric, run_summary

NOW = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)
SUITE = b"id,question,expected_answer\na,Q one?,alpha beta\nb,Q two?,gamma\n"


class CountingTarget(Target):
    kind = "lambdaArn"
    calls = 0

    @property
    def name(self) -> str:
        return "counting"

    def invoke(self, case):
        CountingTarget.calls += 1
        return TargetResponse(
            answer="alpha beta" if case.case_id == "a" else "delta epsilon",
            contexts=["ctx"],
            latency_ms=12.5,
        )


def counting(spec, *, session=None):
    return CountingTarget(spec)


@pytest.fixture
def store(monkeypatch):
    with suite_store(SUITE) as store:
        CountingTarget.calls = 0
        yield store


def prepared(store, **event):
    raw = {
        "key": "test-suites/s.csv",
        "iterations": 2,
        "target": {"lambdaArn": "fn"},
        "metrics": ["Exact match"],
        **event,
    }
    return prepare.prepare_run(read_event(raw), store, now=NOW)


def test_prepare_writes_manifest_and_config(store):
    out = prepared(store, run_id="r1", max_concurrency=3)
    assert out.run_id == "r1" and out.item_count == 4 and out.max_concurrency == 3
    items = store.get_json(out.manifest_key)
    assert [i["item_id"] for i in items] == ["c00001-i1", "c00002-i1", "c00001-i2", "c00002-i2"]
    config = store.get_json(store.run_key("r1"))
    assert config["report_prefix"] == "test-reports/fn/261122-093005-"
    assert config["metrics"] == ["Exact match"] and config["case_count"] == 2


def test_the_run_configuration_carries_the_judge_typed(store):
    judge = {"bedrock": {"model_id": "anthropic.claude-3-haiku"}, "timeout_seconds": 30}
    prepared(store, run_id="rj", judge=judge)
    config = RunContext.load(store, "rj").config
    assert isinstance(config.judge, JudgeConfig)
    assert config.judge.bedrock is not None and config.judge.model_name == (
        "anthropic.claude-3-haiku"
    )
    assert config.judge.timeout_seconds == 30 and config.judge.max_retries == 4  # a default
    assert RunConfig.model_validate(store.get_json(store.run_key("rj"))) == config  # round trip


def test_the_run_configuration_carries_the_target_typed_and_stores_it_as_written(store):
    # written out of the model's field order, with whole numbers where the model has floats
    target = {"timeout_seconds": 30, "lambdaArn": "fn", "max_retries": 2, "question_field": "q"}
    prepared(store, run_id="rt", target=target)
    stored = store.get_json(store.run_key("rt"))
    assert json.dumps(stored["target"]) == json.dumps(target)  # same keys, order and numbers
    config = RunContext.load(store, "rt").config
    assert isinstance(config.target, LambdaSpec)
    assert config.target.lambdaArn == "fn" and config.target.timeout_seconds == 30.0
    assert config.target.question_field == "q" and config.target.history_field == "conversation"
    again = config.model_dump(mode="json")["target"]
    assert json.dumps(again) == json.dumps(target)  # and so does a second trip
    built = []
    context = RunContext.load(
        store, "rt", target_factory=lambda spec, *, session: built.append(spec) or counting(spec)
    )
    assert context.target.name == "counting" and built == [config.target]


def test_a_judge_metric_with_an_embedding_part_sends_the_run_to_model_scoring(store):
    # so a deployment with GPU scoring scores its similarity part on the GPU job
    assert prepared(store, run_id="r1").batch_scoring is False
    assert prepared(store, run_id="r2", metrics=["Answer correctness"]).batch_scoring is True


def test_the_score_step_result_takes_the_per_case_result_place() -> None:
    def result(metric: str, score: float) -> MetricResult:
        return MetricResult(
            evaluator=metric, metric=metric, status="scored", score=score, reason=""
        )

    per_case = [result("A", 0.1), result("Answer correctness", 0.2), result("B", 0.3)]
    merged = merge.merged_results(per_case, [result("Answer correctness", 0.9), result("C", 0.5)])
    assert [(r.metric, r.score) for r in merged] == [
        ("A", 0.1),
        ("Answer correctness", 0.9),
        ("B", 0.3),
        ("C", 0.5),
    ]


def test_prepare_bad_suite_writes_nothing(store):
    store.put_bytes("test-suites/bad.csv", b"question\n", "text/csv")
    with pytest.raises(SuiteError, match="no test cases"):
        prepared(store, key="test-suites/bad.csv")
    assert store.list_keys("runs/") == []


def test_prepare_missing_suite_names_the_key(store):
    with pytest.raises(Exception, match=r"test-suites/nope\.csv does not exist"):
        prepared(store, key="test-suites/nope.csv")


def test_run_case_is_idempotent(store):
    out = prepared(store, run_id="r1")
    item = store.get_json(out.manifest_key)[0]
    first = run_case.run_case(
        RunContext.load(store, "r1", target_factory=counting), ManifestItem.model_validate(item)
    )
    second = run_case.run_case(
        RunContext.load(store, "r1", target_factory=counting), ManifestItem.model_validate(item)
    )
    assert first.status == "ok" and second.reused is True
    assert CountingTarget.calls == 1
    record = store.get_json(store.record_key("r1", item["item_id"]))
    assert record["latency_ms"] == 12.5 and record["results"][0]["score"] == 1.0


def test_record_failure_never_overwrites_a_good_record(store):
    out = prepared(store, run_id="r1")
    good, bad = store.get_json(out.manifest_key)[:2]
    run_case.run_case(
        RunContext.load(store, "r1", target_factory=counting), ManifestItem.model_validate(good)
    )
    run_case.record_failure(
        store,
        "r1",
        ManifestItem.model_validate(good),
        StepFailure.model_validate({"Error": "Lambda.Unknown", "Cause": "x"}),
    )
    assert store.get_json(store.record_key("r1", good["item_id"]))["status"] == "ok"
    run_case.record_failure(
        store,
        "r1",
        ManifestItem.model_validate(bad),
        StepFailure.model_validate({"Error": "States.Timeout", "Cause": "slow"}),
    )
    rec = store.get_json(store.record_key("r1", bad["item_id"]))
    assert rec["status"] == "task_failed" and rec["error"] == "States.Timeout: slow"


class LengthRatio(BatchEvaluator):
    """Test-only batched evaluator: records how it was called."""

    name = "Length ratio (test)"
    description = "answer length / expected length"
    inputs = frozenset({Input.ANSWER, Input.EXPECTED_ANSWER})
    metrics = (MetricSpec("Length ratio", "ratio", threshold=0.5, primary=True),)
    batches: ClassVar[list[int]] = []

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored]]:
        LengthRatio.batches.append(len(samples))
        return [
            {"Length ratio": Scored(len(s.answer) / len(s.expected_answer), "ratio")}
            for s in samples
        ]


@pytest.fixture
def batch_evaluator():
    registry.register(LengthRatio)
    LengthRatio.batches = []
    yield LengthRatio
    registry._REGISTRY.pop(LengthRatio.name)
    registry._LOOKUP.pop(registry._key(LengthRatio.name))


def test_score_step_batches_the_whole_run_and_aggregate_merges(store, batch_evaluator):
    out = prepared(store, run_id="r2", metrics=["Exact match", "Length ratio (test)"])
    items = store.get_json(out.manifest_key)
    for item in items[:3]:  # the fourth case's task "crashed" and left no record
        run_case.run_case(
            RunContext.load(store, "r2", target_factory=counting), ManifestItem.model_validate(item)
        )
    assert score.score_run(RunContext.load(store, "r2")).wire() == {
        "evaluators": ["Length ratio (test)"],
        "samples": 3,
    }
    assert LengthRatio.batches == [3]  # one call for the whole run, not one per case
    summary = aggregate.aggregate_run(RunContext.load(store, "r2"), now=NOW)
    by_metric = {m.metric: m for m in summary.metrics}
    ratio = by_metric["Length ratio"]
    assert ratio.count == 3 and ratio.errored == 1
    # items run: a (10/10 chars), b (13/5), a again (10/10)
    assert ratio.average == pytest.approx((1.0 + 13 / 5 + 1.0) / 3)
    assert summary.task_failures == 1
    details = store.get_bytes(summary.reports.details).decode("utf-8-sig")
    rows = list(csv.DictReader(io.StringIO(details)))
    assert len(rows) == 4
    missing = next(r for r in rows if r["status"] == "task_failed")
    assert "no result was recorded" in missing["error"]


def test_aggregate_statistics_and_gates(store):
    prepared(
        store,
        run_id="r3",
        metrics=["Exact match", "Token F1"],
        fail_under={"Token F1": 0.5, "Exact match": 0.9},
    )
    for item in store.get_json(store.manifest_key("r3")):
        run_case.run_case(
            RunContext.load(store, "r3", target_factory=counting), ManifestItem.model_validate(item)
        )
    summary = aggregate.aggregate_run(RunContext.load(store, "r3"), now=NOW)
    em = next(m for m in summary.metrics if m.metric == "Exact match")
    # case a matches exactly, case b does not; two iterations each
    assert em.count == 4 and em.average == 0.5 and em.pass_rate == 0.5
    assert em.min == 0.0 and em.max == 1.0
    assert em.std == pytest.approx(0.57735, abs=1e-4)  # sample std of [1, 0, 1, 0]
    gates = {g.gate: g.passed for g in summary.gates}
    assert gates == {"Token F1": True, "Exact match": False}
    result = store.get_bytes(summary.reports.result).decode("utf-8-sig")
    row = next(r for r in csv.DictReader(io.StringIO(result)) if r["Metric"] == "Exact match")
    assert row["Average Score"] == "0.5000" and row["Pass rate"] == "0.5000"


def test_csv_neutralises_formula_injection():
    assert neutralise('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert neutralise("+1+1") == "'+1+1" and neutralise("@SUM(A1)") == "'@SUM(A1)"
    assert neutralise("\tcmd") == "'\tcmd" and neutralise("-0.5") == "-0.5"
    text = to_csv(["a"], [["=1+2"]]).decode("utf-8-sig")
    assert text.splitlines()[1] == "'=1+2"


def test_execution_output_stays_under_the_step_functions_limit():
    summary = run_summary(
        metrics=[metric("m", average=0.5, pass_rate=0.5, count=1, p10=0.1)],
        run_metrics={
            "Intent classification": {
                "confusion_matrix": {
                    f"label-{i}": {f"label-{j}": i * j for j in range(300)} for i in range(300)
                }
            }
        },
        problems=[
            {
                "severity": "high",
                "type": "below_threshold",
                "metric": "m",
                "description": "x" * 500,
                "affected_cases": ["c"] * 20,
                "affected_count": 2000,
                "suggested_action": "y",
            }
        ],
    )
    small = summary.model_copy(update={"run_metrics": {}})
    assert fit_output(small) == small.model_dump(mode="json")  # whole when it fits
    assert "truncated" not in fit_output(small)
    fitted = fit_output(summary)
    assert len(json.dumps(fitted)) <= MAX_OUTPUT_BYTES
    assert fitted["truncated"] is True
    assert fitted["reports"] == summary.reports.model_dump()
    assert fitted["run_metrics"] == {"Intent classification": "see summary.json"}
    assert fitted["problems"] == [
        {"severity": "high", "type": "below_threshold", "metric": "m", "affected_count": 2000}
    ]
    assert fitted["metrics"][0]["average"] == 0.5
    # still too big: the per-metric lines keep only what a reader of the output needs
    cut = fit_output(summary, limit=1000)
    assert cut["metrics"] == [
        {
            "metric": "m",
            "evaluator": "m",
            "primary": True,
            "average": 0.5,
            "pass_rate": 0.5,
            "count": 1,
            "threshold": 0.5,
        }
    ]


def test_run_case_reads_a_record_only_where_one_may_exist(store, monkeypatch):
    # A missed GET per case cost a third of run_case: the run's records are listed once per
    # context, and a case reads its record only when the listing (or this context) has one.
    out = prepared(store, run_id="r1")
    items = store.get_json(out.manifest_key)
    reads: list[str] = []
    get = store.get_json_or_none
    monkeypatch.setattr(store, "get_json_or_none", lambda key: reads.append(key) or get(key))
    context = RunContext.load(store, "r1", target_factory=counting)
    for item in items:
        run_case.run_case(context, ManifestItem.model_validate(item))
    assert reads == [] and CountingTarget.calls == 4
    # the same context, again: it knows what it wrote, and reuses the records
    assert run_case.run_case(context, ManifestItem.model_validate(items[0])).reused is True
    # a new context (a resumed run, another container) lists them and reuses them too
    again = RunContext.load(store, "r1", target_factory=counting)
    assert all(run_case.run_case(again, ManifestItem.model_validate(item)).reused for item in items)
    assert CountingTarget.calls == 4
    assert len(reads) == 5
