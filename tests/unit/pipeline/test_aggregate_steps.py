"""Aggregate as three steps (issue 30): build the report data (frozen once built), summarise
it, write the report set. Each step can be called alone: building reads the run and writes
nothing, the summary names the set's keys, and only writing the set publishes it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalrunner.pipeline import aggregate, run_case
from evalrunner.pipeline.context import RunContext
from evalrunner.run import AggregateState, ManifestItem, StepFailure
from tests.support.suite_bucket import suite_store
from tests.unit.pipeline.test_pipeline_steps import NOW, SUITE, counting, prepared


@pytest.fixture
def store():
    with suite_store(SUITE) as store:
        yield store


def _written(store, prefix: str) -> set[str]:
    """The files of the report set under ``prefix`` that exist."""
    return set(store.list_keys(prefix)) & set(aggregate.report_keys(prefix).keys())


def _ran(store, run_id: str) -> RunContext:
    out = prepared(store, run_id=run_id)
    for raw in store.get_json(out.manifest_key)[:3]:  # the fourth task left no record
        item = ManifestItem.model_validate(raw)
        run_case.run_case(RunContext.load(store, run_id, target_factory=counting), item)
    return RunContext.load(store, run_id)


def test_building_the_report_data_writes_nothing_and_cannot_be_changed(store):
    context = _ran(store, "s1")
    built = aggregate.build_report(context, AggregateState(run_id="s1"), now=NOW)
    assert _written(store, context.config.report_prefix) == set()
    assert [r.status for r in built.every_row].count("task_failed") == 1
    with pytest.raises(ValidationError, match="frozen"):
        built.data.problems = []


def test_the_summary_names_the_set_and_writing_publishes_it(store):
    context = _ran(store, "s2")
    state = AggregateState(run_id="s2", score_failure=StepFailure(error="States.Timeout", cause=""))
    built = aggregate.build_report(context, state, now=NOW)
    summary = aggregate.summarise(built, state, store.bucket)
    assert summary.reports == aggregate.report_keys(context.config.report_prefix)
    assert summary.step_failures == ["States.Timeout"]
    assert summary.task_failures == 1 and summary.verdict == built.data.verdict
    assert _written(store, context.config.report_prefix) == set()  # summarising writes none

    aggregate.write_report_set(store, built, summary)
    assert _written(store, context.config.report_prefix) == set(summary.reports.keys())
    assert store.get_json(summary.reports.summary) == summary.model_dump(mode="json")


def test_the_three_steps_are_what_aggregate_run_returns(store):
    context = _ran(store, "s3")
    built = aggregate.build_report(context, AggregateState(run_id="s3"), now=NOW)
    stepwise = aggregate.summarise(built, AggregateState(run_id="s3"), store.bucket)
    assert aggregate.aggregate_run(RunContext.load(store, "s3"), now=NOW) == stepwise
