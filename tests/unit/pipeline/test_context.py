"""The run context: built once per run and process, handed to each step; evaluators get
their judge and model hub when they are built."""

from __future__ import annotations

import ast
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalrunner.evaluators import resolve
from evalrunner.evaluators.judge_base import JudgeEvaluator
from evalrunner.evaluators.model_base import ModelEvaluator
from evalrunner.event import read_event
from evalrunner.models import ModelHub
from evalrunner.pipeline import prepare, run_case, scoring
from evalrunner.pipeline.context import RunContext, Runtime
from evalrunner.run import ManifestItem
from evalrunner.storage import RunStore
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.spec import TargetSpec
from tests.support.fake_judge import FakeJudge
from tests.support.suite_bucket import suite_store

NOW = datetime(2026, 11, 23, tzinfo=UTC)
SUITE = b"question,expected_answer\nQ one?,alpha\nQ two?,beta\n"
REPO = Path(__file__).resolve().parents[3]


class Echo(Target):
    kind = "lambdaArn"
    built = 0

    def __init__(self, spec: TargetSpec) -> None:  # the run's target, typed
        Echo.built += 1

    def invoke(self, case):
        return TargetResponse(answer=case.question, contexts=[])


def echo(spec, *, session=None):
    return Echo(spec)


@pytest.fixture
def store():
    with suite_store(SUITE, bucket="ctx-bucket") as store:
        yield store


def prepare_run(store: RunStore, run_id: str, **event) -> None:
    raw = {
        "key": "test-suites/s.csv",
        "target": {"lambdaArn": "fn"},
        "metrics": ["Exact match"],
        "run_id": run_id,
        "iterations": 1,
        **event,
    }
    prepare.prepare_run(read_event(raw), store, now=NOW)


def test_the_cases_of_a_run_share_one_context_and_one_target(store, monkeypatch):
    prepare_run(store, "r1", iterations=3)
    runtime = Runtime(target_factory=echo)
    reads = []
    original = store.get_json
    monkeypatch.setattr(store, "get_json", lambda key: reads.append(key) or original(key))
    Echo.built = 0
    items = original(store.manifest_key("r1"))
    contexts = {id(runtime.context(store, "r1")) for _ in items}
    for item in items:
        assert (
            run_case.run_case(
                runtime.context(store, "r1"), ManifestItem.model_validate(item)
            ).status
            == "ok"
        )
    assert len(contexts) == 1
    assert reads.count(store.run_key("r1")) == 1  # the configuration is read once
    assert Echo.built == 1  # one client for six case runs


def test_a_runtime_keeps_only_its_most_recent_runs(store):
    for n in range(4):
        prepare_run(store, f"r{n}")
    runtime = Runtime(target_factory=echo, keep=2)
    first = runtime.context(store, "r0")
    runtime.context(store, "r1")
    assert runtime.context(store, "r0") is first  # still held: r0 was used last
    runtime.context(store, "r2")  # r1 goes, the least recently used
    runtime.context(store, "r3")  # r0 goes
    assert runtime.context(store, "r0") is not first


def test_evaluators_receive_the_runs_judge_and_hub_when_built(store):
    prepare_run(
        store,
        "r1",
        metrics=["Faithfulness", "Bias", "Answer semantic similarity", "Groundedness"],
        judge={"openai": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}},
    )
    judge = FakeJudge()
    hubs: list[ModelHub] = []

    def hub() -> ModelHub:
        hubs.append(ModelHub(device="cpu"))
        return hubs[-1]

    made = []

    def build_judge(spec, *, store, session):
        made.append(spec)
        return judge

    context = RunContext.load(store, "r1", hub_factory=hub, judge_factory=build_judge)
    evaluators = context.evaluators([e.requires for e in map(resolve, context.config.metrics)])
    judged = [e for e in evaluators if isinstance(e, JudgeEvaluator)]
    modelled = [e for e in evaluators if isinstance(e, ModelEvaluator)]
    assert len(judged) == 2 and all(e.judge is judge for e in judged)
    assert made == [context.config.judge]  # built once, from the event's judge object
    assert len(modelled) == 2 and len(hubs) == 1 and all(e.hub is hubs[0] for e in modelled)


def test_a_runs_evaluators_are_built_once_and_serve_every_case(store, monkeypatch):
    """Resolved and built at the first case, then the same instances for every later case
    of the run (the list itself a fresh copy each time); another requirement set is built
    apart."""
    prepare_run(store, "r1", metrics=["Exact match", "Token F1"], iterations=3)
    context = RunContext.load(store, "r1", target_factory=echo)
    built = []
    original = scoring.Evaluator.for_run.__func__

    def counting(cls, thresholds, options, services):
        built.append(cls.name)
        return original(cls, thresholds, options, services)

    monkeypatch.setattr(scoring.Evaluator, "for_run", classmethod(counting))
    items = store.get_json(store.manifest_key("r1"))
    for item in items:
        assert run_case.run_case(context, ManifestItem.model_validate(item)).status == "ok"
    assert len(items) == 6 and built == ["Exact match", "Token F1"]
    first, again = context.evaluators(run_case.PER_CASE), context.evaluators(run_case.PER_CASE)
    assert first is not again and all(a is b for a, b in zip(first, again, strict=True))
    assert context.evaluators([]) == [] and len(built) == 2
    record = store.get_json(store.record_key("r1", items[-1]["item_id"]))
    assert [r["metric"] for r in record["results"]] == ["Exact match", "Token F1"]


def test_a_run_without_a_judge_builds_none_and_its_judge_metrics_say_why(store):
    prepare_run(store, "r1", metrics=["Faithfulness"])
    context = RunContext.load(store, "r1")
    (faithfulness,) = context.evaluators(run_case.PER_CASE)
    assert context.judge is None and faithfulness.judge is None
    (result,) = faithfulness.evaluate(scoring.sample_of(_case(), _answer()))
    assert result.status == "skipped" and "no LLM judge configured" in result.reason


def test_the_latency_comes_from_the_contexts_clock(store):
    prepare_run(store, "r1")
    ticks = iter([10.0, 10.25])
    context = RunContext.load(store, "r1", target_factory=echo, clock=lambda: next(ticks))
    (item, _) = store.get_json(store.manifest_key("r1"))
    run_case.run_case(context, ManifestItem.model_validate(item))
    record = store.get_json(store.record_key("r1", item["item_id"]))
    assert record["latency_ms"] == 250.0


def test_the_core_does_not_import_the_lambda_handlers():
    """The engine is handed its handlers (lambdas/local.py builds them); one module, the
    laptop's composition root shared by the CLI and the Python API, hands them over."""
    offenders = []
    for path in sorted((REPO / "evalrunner").rglob("*.py")):
        if path == REPO / "evalrunner" / "launch.py":
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] == "lambdas"]
    assert offenders == []


def _case():
    from evalrunner.suite.model import TestCase

    return TestCase(index=0, case_id="c", question="Q?", expected_answer="A")


def _answer():
    return TargetResponse(answer="A", contexts=["A is true."])
