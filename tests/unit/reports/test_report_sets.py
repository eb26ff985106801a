"""Report sets: a prefix is claimed atomically (two runs in one second write two sets), and a
set is complete only once its manifest is written last (an interrupted Aggregate leaves
nothing a later run would compare with)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import boto3
import pytest
from botocore.stub import ANY, Stubber

from evalrunner.errors import StorageError
from evalrunner.event import read_event
from evalrunner.pipeline import aggregate, prepare, run_case
from evalrunner.pipeline.baseline import find_baseline
from evalrunner.pipeline.context import RunContext
from evalrunner.reports.summary import RunSummary
from evalrunner.reports.writers.publish import (
    CLAIM_NAME,
    claim_local,
    claim_report_prefix,
    complete_summaries,
)
from evalrunner.run import ManifestItem
from evalrunner.storage import RunStore
from tests.unit.pipeline.test_pipeline_steps import NOW, prepared, store  # noqa: F401  (fixture)

STAMP = "test-reports/fn/261122-093005-"


def full_run(store, run_id: str, **event) -> RunSummary:  # noqa: F811
    prepared(store, run_id=run_id, **event)
    for item in store.get_json(store.manifest_key(run_id)):
        run_case.run_case(RunContext.load(store, run_id), ManifestItem.model_validate(item))
    return aggregate.aggregate_run(RunContext.load(store, run_id), now=NOW)


# -- claiming in S3 ------------------------------------------------------------------------


def test_moto_honours_if_none_match_on_put_object(store):  # noqa: F811
    assert store.put_if_absent("k", b"1", "text/plain") is True
    assert store.put_if_absent("k", b"2", "text/plain") is False
    assert store.get_bytes("k") == b"1"


def stubbed_store() -> tuple[RunStore, Stubber]:
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    return RunStore("bkt", client=client), Stubber(client)


def expect_list(stub: Stubber, prefix: str, keys: list[str]) -> None:
    stub.add_response(
        "list_objects_v2",
        {"Contents": [{"Key": k} for k in keys], "IsTruncated": False, "KeyCount": len(keys)},
        {"Bucket": "bkt", "Prefix": prefix},
    )


def expect_claim(stub: Stubber, prefix: str, *, error: tuple[str, int] | None = None) -> None:
    params = {
        "Bucket": "bkt",
        "Key": f"{prefix}{CLAIM_NAME}",
        "Body": ANY,
        "ContentType": "application/json",
        "IfNoneMatch": "*",
    }
    if error:
        stub.add_client_error(
            "put_object",
            service_error_code=error[0],
            http_status_code=error[1],
            expected_params=params,
        )
    else:
        stub.add_response("put_object", {"ETag": '"e"'}, params)


def test_a_lost_claim_takes_the_next_suffix_through_a_real_conditional_put():
    """What S3 answers a second If-None-Match put (412), or one racing another (409)."""
    stubbed, stub = stubbed_store()
    expect_list(stub, STAMP, [])
    expect_claim(stub, STAMP, error=("PreconditionFailed", 412))
    expect_list(stub, "test-reports/fn/261122-093005-2-", [])
    expect_claim(
        stub, "test-reports/fn/261122-093005-2-", error=("ConditionalRequestConflict", 409)
    )
    expect_list(stub, "test-reports/fn/261122-093005-3-", [])
    expect_claim(stub, "test-reports/fn/261122-093005-3-")
    with stub:
        assert claim_report_prefix(stubbed, "fn", NOW, "r1") == "test-reports/fn/261122-093005-3-"
        stub.assert_no_pending_responses()


def test_a_prefix_with_an_older_set_is_skipped_without_a_claim():
    stubbed, stub = stubbed_store()
    expect_list(stub, STAMP, [f"{STAMP}summary.json"])  # written before claims existed
    expect_list(stub, "test-reports/fn/261122-093005-2-", [])
    expect_claim(stub, "test-reports/fn/261122-093005-2-")
    with stub:
        assert claim_report_prefix(stubbed, "fn", NOW, "r1").endswith("-093005-2-")


def test_other_claim_errors_are_storage_errors_not_a_silent_next_suffix():
    stubbed, stub = stubbed_store()
    expect_list(stub, STAMP, [])
    expect_claim(stub, STAMP, error=("AccessDenied", 403))
    with stub, pytest.raises(StorageError, match="cannot write"):
        claim_report_prefix(stubbed, "fn", NOW, "r1")


def test_two_runs_started_together_in_one_second_write_two_complete_sets(store, monkeypatch):  # noqa: F811
    """Both runs find the prefix free (the barrier holds each after its listing until the
    other has listed too), then race for it: the conditional put lets one win."""
    barrier = threading.Barrier(2, timeout=20)
    listed: set[int] = set()
    original = RunStore.list_keys

    def list_then_wait(self, prefix):
        keys = original(self, prefix)
        if prefix == STAMP and threading.get_ident() not in listed:
            listed.add(threading.get_ident())
            barrier.wait()
        return keys

    monkeypatch.setattr(RunStore, "list_keys", list_then_wait)
    outputs: dict[str, object] = {}

    def start(run_id: str) -> None:
        try:
            outputs[run_id] = prepared(store, run_id=run_id)
        except BaseException as exc:  # surfaced below
            outputs[run_id] = exc

    threads = [threading.Thread(target=start, args=(r,)) for r in ("ra", "rb")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(isinstance(v, BaseException) for v in outputs.values()), outputs
    monkeypatch.setattr(RunStore, "list_keys", original)
    prefixes = {r: store.get_json(store.run_key(r))["report_prefix"] for r in ("ra", "rb")}
    assert sorted(prefixes.values()) == [STAMP, "test-reports/fn/261122-093005-2-"]
    for run_id in ("ra", "rb"):
        for item in store.get_json(store.manifest_key(run_id)):
            run_case.run_case(RunContext.load(store, run_id), ManifestItem.model_validate(item))
        summary = aggregate.aggregate_run(RunContext.load(store, run_id), now=NOW)
        assert all(k.startswith(prefixes[run_id]) for k in summary.reports.keys())
    complete = {s.summary.run_id: s for s in complete_summaries(store, "fn")}
    assert set(complete) == {"ra", "rb"}  # two sets, each whole, none overwritten


def test_the_claim_is_visible_before_any_report_is_written(store):  # noqa: F811
    assert store.list_keys(STAMP) == []
    prepared(store, run_id="first")
    # the claim is what the second run sees, before any report is written
    assert store.list_keys(STAMP) == [f"{STAMP}{CLAIM_NAME}"]
    prepared(store, run_id="second")
    assert store.get_json(store.run_key("second"))["report_prefix"].endswith("-093005-2-")


# -- claiming locally ----------------------------------------------------------------------


def test_a_local_claim_is_exclusive_across_threads(tmp_path):
    barrier = threading.Barrier(8, timeout=20)
    results: list[bool] = []

    def claim() -> None:
        barrier.wait()
        results.append(claim_local(tmp_path, STAMP, b"{}"))

    threads = [threading.Thread(target=claim) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert sorted(results) == [False] * 7 + [True]
    assert (tmp_path / f"{STAMP}{CLAIM_NAME}").is_file()


def test_a_local_folder_with_files_of_an_older_set_is_not_claimed(tmp_path):
    old = tmp_path / f"{STAMP}details.csv"
    old.parent.mkdir(parents=True)
    old.write_text("x")
    assert claim_local(tmp_path, STAMP, b"{}") is False
    assert claim_local(tmp_path, "test-reports/fn/261122-093005-2-", b"{}") is True


def test_prepare_claims_in_the_local_folder_too(store, tmp_path):  # noqa: F811
    from evalrunner.reports.writers.publish import claiming_in

    (tmp_path / f"{STAMP}{CLAIM_NAME}").parent.mkdir(parents=True)
    (tmp_path / f"{STAMP}{CLAIM_NAME}").write_text("{}")  # another process's run
    with claiming_in(tmp_path):
        prepared(store, run_id="local")
    prefix = store.get_json(store.run_key("local"))["report_prefix"]
    assert prefix == "test-reports/fn/261122-093005-2-"
    assert (tmp_path / f"{prefix}{CLAIM_NAME}").is_file()


def test_the_clock_is_one_function(monkeypatch, store):  # noqa: F811
    frozen = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    monkeypatch.setattr(prepare, "utcnow", lambda: frozen)
    out = prepare.prepare_run(
        read_event({"key": "test-suites/s.csv", "iterations": 1, "target": {"lambdaArn": "fn"}}),
        store,
    )
    config = store.get_json(store.run_key(out.run_id))
    assert config["report_prefix"] == "test-reports/fn/260102-030405-"


# -- publishing ----------------------------------------------------------------------------


class Interrupted(Exception):
    pass


def test_an_interrupted_aggregate_leaves_no_baseline_and_the_next_run_works(store, monkeypatch):  # noqa: F811
    full_run(store, "r1")
    prepared(store, run_id="r2")
    for item in store.get_json(store.manifest_key("r2")):
        run_case.run_case(RunContext.load(store, "r2"), ManifestItem.model_validate(item))
    writes = {"n": 0}
    original = RunStore.put_bytes

    def failing_put(self, key, data, content_type):
        if key.startswith("test-reports/"):
            writes["n"] += 1
            if writes["n"] > 4:  # half the set is written, then the Lambda dies
                raise Interrupted("the function timed out")
        return original(self, key, data, content_type)

    monkeypatch.setattr(RunStore, "put_bytes", failing_put)
    with pytest.raises(Interrupted):
        aggregate.aggregate_run(RunContext.load(store, "r2"), now=NOW)
    monkeypatch.setattr(RunStore, "put_bytes", original)
    r2_prefix = store.get_json(store.run_key("r2"))["report_prefix"]
    assert store.list_keys(r2_prefix)  # the half-written files are there ...
    assert [s.summary.run_id for s in complete_summaries(store, "fn")] == ["r1"]  # not a set
    found = find_baseline(
        store,
        target="fn",
        suite="test-suites/s.csv",
        run_id="r3",
        started_at=NOW.isoformat(timespec="seconds"),
    )
    assert found is not None and found.run_id == "r1"
    # the next run works and compares with the last complete run
    summary = full_run(store, "r3")
    assert summary.regression is not None and summary.regression.baseline_run_id == "r1"
    assert summary.reports.manifest.startswith("test-reports/fn/261122-093005-3-")
    # and the interrupted run's retry completes its own set
    aggregate.aggregate_run(RunContext.load(store, "r2"), now=NOW)
    assert {s.summary.run_id for s in complete_summaries(store, "fn")} == {"r1", "r2", "r3"}


def test_the_manifest_is_written_last_and_lists_every_file(store, monkeypatch):  # noqa: F811
    order: list[str] = []
    original = RunStore.put_bytes

    def recording_put(self, key, data, content_type, **options):
        order.append(key)
        return original(self, key, data, content_type, **options)

    monkeypatch.setattr(RunStore, "put_bytes", recording_put)
    summary = full_run(store, "r1")
    # the target's history page is not part of the set: it is refreshed after the manifest,
    # so it only ever lists complete sets
    history = ["test-reports/fn/history.json", "test-reports/fn/history.html"]
    assert order[-2:] == history
    reports = [k for k in order if k.startswith("test-reports/") and k not in history]
    assert reports[-1] == summary.reports.manifest
    assert json.loads(store.get_bytes(history[0]))["runs"][0]["run_id"] == "r1"
    assert summary.reports.keys()[-1] == summary.reports.manifest  # copies: in this order
    assert list(summary.model_dump(mode="json")["reports"])[-1] == "manifest"
    manifest = store.get_json(summary.reports.manifest)
    listed = set(manifest["files"])
    assert listed == set(summary.reports.keys()) - {summary.reports.manifest}


def test_the_manifest_hashes_the_bytes_stored_after_redaction(store):  # noqa: F811
    """Deployed, Aggregate can know a secret that reached a report's text (another process
    redacted the records); the store masks it as it writes, and the manifest must describe
    what was stored, or every reader would skip the set as incomplete."""
    from evalrunner import redaction
    from evalrunner.reports.writers.publish import SetWriter, verified

    redaction.register("sk-live-0123456789abcdef")
    try:
        writer = SetWriter(store, "r1", "test-reports/t/261123-000000-")
        writer.put(
            "test-reports/t/261123-000000-summary.json",
            b'{"k": "sk-live-0123456789abcdef"}',
            "application/json",
        )
        manifest = store.get_json(writer.publish())
    finally:
        redaction.forget_all()
    key = "test-reports/t/261123-000000-summary.json"
    stored = store.get_bytes(key)
    assert b"sk-live" not in stored
    assert verified(manifest, key, stored)


def test_runs_of_one_second_sort_in_the_order_they_claimed_their_prefixes():
    """Two local runs a second apart are common; their ids' random suffixes must not decide
    which is older: the history and the baseline follow the claims (``<stamp>-`` first)."""
    from evalrunner.reports.writers.history import build_history
    from evalrunner.reports.writers.publish import run_order
    from tests.support.summaries import report_keys, run_summary

    stamp = "test-reports/prod-rag/261122-100000-"
    first = run_summary(run_id="261122-100000-ffffff", reports=report_keys(stamp).model_dump())
    second = run_summary(
        run_id="261122-100000-000000", reports=report_keys(f"{stamp}2-").model_dump()
    )
    third = run_summary(
        run_id="261122-100000-888888", reports=report_keys(f"{stamp}10-").model_dump()
    )
    later = run_summary(
        run_id="261122-100001-000000",
        started_at="2026-11-22T10:00:01+00:00",
        reports=report_keys("test-reports/prod-rag/261122-100001-").model_dump(),
    )
    shuffled = [later, third, first, second]
    assert sorted(shuffled, key=run_order) == [first, second, third, later]
    history = build_history("prod-rag", shuffled)
    assert [r.run_id for r in history.runs] == [s.run_id for s in (first, second, third, later)]
