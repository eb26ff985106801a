"""Aggregate reads the records a chunk at a time and keeps their rows, not the records: what it
holds grows with the reports, not with every parsed record of the run at once."""

from __future__ import annotations

import gc
import json
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

from evalrunner.evaluators import resolve
from evalrunner.pipeline import aggregate, merge
from evalrunner.pipeline.score import iter_records, load_manifest, load_records
from evalrunner.run import CaseRecord, ManifestItem
from evalrunner.storage import PARALLEL_READS, RunStore
from evalrunner.suite.model import TestCase
from evalrunner.targets.base import TargetResponse


def items(n: int) -> list[ManifestItem]:
    return [
        ManifestItem(
            item_id=f"c{i}-i1",
            iteration=1,
            case=TestCase(
                index=i, case_id=f"c{i}", question=f"Q{i}?", expected_answer=f"answer {i}"
            ),
        )
        for i in range(n)
    ]


def answered(item: ManifestItem) -> CaseRecord:
    record = CaseRecord.for_item(item)
    record.response = TargetResponse(answer=f"answer {item.case.index}", contexts=["ctx"])
    record.judge_usage = {"calls": 1, "input_tokens": 10, "output_tokens": 2}
    return record


class CountingStore:
    """The two calls iter_records makes, counting the reads (and the threads they ran on);
    ``readers`` as RunStore sets it for S3 (16) or for an in-process client (1)."""

    def __init__(self, records: dict[str, CaseRecord], readers: int = 16) -> None:
        self.records, self.reads, self.readers = records, 0, readers
        self.threads: set[int] = set()

    @staticmethod
    def record_key(run_id: str, item_id: str) -> str:
        return item_id

    def get_bytes_or_none(self, key: str) -> bytes | None:
        self.reads += 1
        self.threads.add(threading.get_ident())
        record = self.records.get(key)
        return record.model_dump_json().encode() if record else None


def test_records_are_read_a_chunk_at_a_time_in_manifest_order() -> None:
    run = items(10)
    store = CountingStore({i.item_id: answered(i) for i in run if i.case.index != 6})
    stream = iter_records(store, "r", run, chunk=4)  # type: ignore[arg-type]
    first = next(stream)
    assert store.reads <= 4  # at most the first chunk (its reads run in parallel), not the run
    rest = list(stream)
    assert store.reads == 10
    pairs = [first, *rest]
    assert [i.item_id for i, _ in pairs] == [i.item_id for i in run]
    assert [r.item_id if r else None for _, r in pairs] == [
        i.item_id if i.case.index != 6 else None for i in run
    ]
    # the list form (the Score step's) is the same records
    assert [r.item_id if r else None for r in load_records(store, "r", run)] == [  # type: ignore[arg-type]
        r.item_id if r else None for _, r in pairs
    ]


def test_an_in_process_store_is_read_in_turn_with_the_same_records() -> None:
    """A store whose client answers in this process (readers == 1) is read on the caller's
    thread, a chunk at a time, in manifest order: the same pairs reader threads give."""
    run = items(10)
    records = {i.item_id: answered(i) for i in run if i.case.index != 6}
    threaded, in_turn = CountingStore(records), CountingStore(records, readers=1)
    want = [(i.item_id, r and r.item_id) for i, r in iter_records(threaded, "r", run, chunk=4)]  # type: ignore[arg-type]
    stream = iter_records(in_turn, "r", run, chunk=4)  # type: ignore[arg-type]
    first = next(stream)
    assert in_turn.reads == 4  # the first chunk, not the run
    got = [(i.item_id, r and r.item_id) for i, r in [first, *stream]]
    assert got == want
    assert in_turn.threads == {threading.get_ident()}
    assert threading.get_ident() not in threaded.threads  # S3's reads: reader threads


def test_the_store_reads_in_turn_only_from_a_client_that_answers_in_process() -> None:
    """RunStore.readers: 1 for the local engine's in-process S3 client (also behind the
    durable-records wrapper, which forwards what it does not define), 16 for any other."""

    class InProcess:
        answers_in_process = True

    class Remote:
        pass

    assert RunStore("b", client=InProcess()).readers == 1
    assert RunStore("b", client=Remote()).readers == PARALLEL_READS
    from evalrunner.engine.embedded import embedded_s3
    from evalrunner.engine.report_copy import DurableRecords

    assert RunStore("b", client=DurableRecords(embedded_s3(fast=True), Path("."))).readers == 1


def test_the_manifest_parsed_from_its_bytes_is_the_one_json_gives() -> None:
    """load_manifest parses the manifest's bytes with pydantic: the items json.loads and
    validating each dict give, conversations and perturbations included."""
    from evalrunner.suite.model import Perturbation

    run = [
        *items(3),
        ManifestItem(
            item_id="p-i2",
            iteration=2,
            case=TestCase(
                index=9,
                case_id="p",
                question="Q?\u2028 \U0001f600",
                categories=["a", "b"],
                perturbation=Perturbation(
                    of="c1", kind="typo", name="typo 0.1", original_question="Q1?"
                ),
            ),
        ),
    ]
    raw = json.dumps([i.model_dump(mode="json") for i in run]).encode()

    class Store:
        @staticmethod
        def manifest_key(run_id: str) -> str:
            return "m"

        def get_bytes(self, key: str) -> bytes:
            return raw

    assert load_manifest(Store(), "r") == [ManifestItem.model_validate(i) for i in json.loads(raw)]  # type: ignore[arg-type]
    assert load_manifest(Store(), "r") == run  # type: ignore[arg-type]


def test_folding_keeps_rows_and_counts_but_no_record() -> None:
    run = items(50)
    evaluators = [resolve("Exact match")()]
    alive: list[weakref.ref[CaseRecord]] = []

    def stream() -> Iterator[tuple[ManifestItem, CaseRecord | None]]:
        for item in run:
            if item.case.index % 10 == 9:
                yield item, None  # the task left no record
                continue
            record = answered(item)
            record.results = evaluators[0].evaluate(
                aggregate.sample_of(item.case, record.response, 10_000)
            )
            alive.append(weakref.ref(record))
            yield item, record
            del record

    folded = merge.fold_records(stream(), {}, evaluators, None)
    gc.collect()
    assert len(alive) == 45 and not [r for r in alive if r() is not None]
    assert [r.case_id for r in folded.rows] == [i.case.case_id for i in run]
    assert (folded.answered, folded.target_errors, folded.task_failures) == (45, 0, 5)
    assert len(folded.judge_usages) == 45
    assert all(r.results and r.results[0].metric == "Exact match" for r in folded.rows)
    # the rows' results are the records' (same values, and the same fields given), sharing one
    # fields-set among them: pydantic's per-model set was half of a row's memory
    scored = [r for row in folded.rows if row.status == "ok" for r in row.results]
    assert len(scored) == 45 and len({id(r.model_fields_set) for r in scored}) == 1
    expected = resolve("Exact match")().evaluate(
        aggregate.sample_of(run[0].case, answered(run[0]).response, 10_000)
    )
    assert [r.model_dump() for r in folded.rows[0].results] == [r.model_dump() for r in expected]
    assert folded.rows[0].results[0].model_dump(exclude_unset=True) == expected[0].model_dump()
    missing = folded.rows[9]
    assert missing.status == "task_failed" and missing.results[0].status != "scored"
    # no evaluator of this run has run-level figures: no answered case is kept for them
    assert folded.summary_cases == []


def test_cases_are_kept_for_an_evaluator_with_run_level_figures() -> None:
    run = items(4)
    evaluators = [resolve("Exact match")(), resolve("Answer classification")()]
    folded = merge.fold_records(((i, answered(i)) for i in run), {}, evaluators, None)
    assert [i.item_id for i, _ in folded.summary_cases] == [i.item_id for i in run]


def test_a_record_parsed_by_pydantic_is_the_record_json_gives() -> None:
    """iter_records lets pydantic parse a record's bytes: the same record as json.loads and
    validating the dict, for what records carry (any Unicode, U+FFFD where text was cleaned,
    floats as Python writes them, big integers)."""
    import json

    from evalrunner.evaluators.base import MetricResult
    from evalrunner.jsonout import dump_json

    (item,) = items(1)
    record = answered(item)
    record.response = TargetResponse(
        answer='Ünïcode 🎉 \ufffd tab\tand\nlines "quoted" \\ 𝔘',
        contexts=["中文", "", "x" * 5000],
        data='{"n": 9223372036854775808, "deep": [{"a": [null, true, 1.5e300]}]}',
        latency_ms=1e-05,
        input_tokens=2**40,
        cost=-0.0,
    )
    record.judge_usage = {"calls": 2**53 + 1, "input_tokens": 10, "output_tokens": 2}
    record.results = [
        MetricResult(
            evaluator="e", metric="m", status="scored", score=1e-05, threshold=0.5, reason="ok ✓"
        )
    ]
    raw = dump_json(record.model_dump(mode="json")).encode("utf-8")
    assert CaseRecord.model_validate_json(raw) == CaseRecord.model_validate(json.loads(raw))
