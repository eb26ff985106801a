"""Issue 34 item 1: each source reads its shipped sample into interactions with no expected
answer, and a malformed record becomes a problem naming its file, line and field while the
good records around it are kept."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalrunner.monitor.model import MonitorError
from evalrunner.monitor.reading import detect, read_location
from evalrunner.monitor.sources import source_kinds

SAMPLES = Path(__file__).parents[3] / "test_suites" / "monitor"
CSV_MAP = {"question": "user_message", "answer": "bot_reply", "timestamp": "logged_at"}


def test_every_kind_is_registered_by_name() -> None:
    assert set(source_kinds()) == {
        "jsonl",
        "csv",
        "otel",
        "bedrock-invocations",
        "bedrock-agent-traces",
    }


@pytest.mark.parametrize(
    ("file", "kind"),
    [
        ("interactions.jsonl", "jsonl"),
        ("interactions.csv", "csv"),
        ("otel-genai-traces.json", "otel"),
        ("bedrock-invocations.json.gz", "bedrock-invocations"),
        ("bedrock-agent-traces.jsonl", "bedrock-agent-traces"),
    ],
)
def test_each_shipped_sample_is_read_whole(file: str, kind: str) -> None:
    read = read_location(str(SAMPLES / file), mapping=CSV_MAP if kind == "csv" else None)
    assert read.problems == []
    assert len(read.interactions) == 4
    assert {i.source for i in read.interactions} == {kind}
    last = read.interactions[-1]
    assert last.question == "What is the notice period when I resign?"
    assert last.answer == "I'm not sure, please ask someone."
    assert all(i.id_kind == "record" for i in read.interactions)
    assert len({i.id for i in read.interactions}) == 4


def test_detect_tells_each_sample_apart() -> None:
    for file, kind in [
        ("interactions.jsonl", "jsonl"),
        ("otel-genai-traces.json", "otel"),
        ("bedrock-agent-traces.jsonl", "bedrock-agent-traces"),
    ]:
        assert detect(file, (SAMPLES / file).read_text("utf-8")) == kind
    body = gzip.decompress((SAMPLES / "bedrock-invocations.json.gz").read_bytes()).decode()
    assert detect("x.json.gz", body) == "bedrock-invocations"


def test_jsonl_fields_contexts_steps_session() -> None:
    first = read_location(str(SAMPLES / "interactions.jsonl")).interactions[0]
    assert first.id == "chat-1001"
    assert first.session == "s-17"
    assert first.contexts[0].startswith("Annual leave: full-time employees")
    assert first.steps[0].kind == "knowledge_base" and first.steps[0].name == "hr-policies"
    assert first.timestamp.isoformat() == "2026-01-31T09:10:00+00:00"


def test_csv_mapping_names_the_columns() -> None:
    read = read_location(str(SAMPLES / "interactions.csv"), mapping=CSV_MAP)
    first = read.interactions[0]
    assert first.id == "req-2001"  # request_id: a default alias
    assert first.session == "web-0"
    assert first.contexts == [
        "Annual leave: full-time employees are entitled to 25 days per calendar year in "
        "addition to public holidays."
    ]
    # without the mapping the question column is not found: every row names it
    unmapped = read_location(str(SAMPLES / "interactions.csv"))
    assert unmapped.interactions == []
    assert unmapped.problems[0].text().endswith("line 2, field 'question': missing or empty")


def test_a_mapping_field_that_does_not_exist_is_refused() -> None:
    with pytest.raises(MonitorError, match="unknown field"):
        read_location(str(SAMPLES / "interactions.jsonl"), "jsonl", {"reply": "x"})
    with pytest.raises(MonitorError, match="takes no column mapping"):
        read_location(str(SAMPLES / "otel-genai-traces.json"), "otel", {"answer": "x"})


def test_otel_reads_both_conventions_retrieval_and_tools() -> None:
    read = read_location(str(SAMPLES / "otel-genai-traces.json"))
    agent, *_, events_style = read.interactions
    # v1.37+ attributes on an invoke_agent span, a retrieval span with its documents
    assert agent.id == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert agent.question == "How many days of annual leave do I get?"
    assert agent.session == "conv-0"
    assert agent.contexts[0].startswith("Annual leave:")
    assert agent.steps[0].kind == "knowledge_base" and agent.steps[0].name == "hr-policies"
    # v1.36 span events, and a failed execute_tool span
    assert events_style.answer == "I'm not sure, please ask someone."
    assert events_style.steps[0].name == "lookup_policy"
    assert events_style.steps[0].failed and events_style.steps[0].arguments == {
        "topic": "notice period"
    }


def test_otel_indexed_attributes_and_a_trace_without_an_answer(tmp_path: Path) -> None:
    def span(trace: str, attrs: dict[str, str]) -> dict[str, object]:
        return {
            "traceId": trace,
            "spanId": "01",
            "startTimeUnixNano": "1769853600000000000",
            "endTimeUnixNano": "1769853601000000000",
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attrs.items()],
        }

    old = {
        "gen_ai.operation.name": "chat",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": "Hi?",
        "gen_ai.completion.0.content": "Hello.",
    }
    broken = {"gen_ai.operation.name": "chat", "gen_ai.prompt.0.content": "Anyone?"}
    lines = [
        {"resourceSpans": [{"scopeSpans": [{"spans": [span("aa", old)]}]}]},
        {"resourceSpans": [{"scopeSpans": [{"spans": [span("bb", broken)]}]}]},
    ]
    path = tmp_path / "spans.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", "utf-8")
    read = read_location(str(path), "otel")
    assert [(i.id, i.question, i.answer) for i in read.interactions] == [("aa", "Hi?", "Hello.")]
    (problem,) = read.problems
    assert problem.text() == (
        f"{path} line 2, field 'gen_ai.output.messages': trace bb: no assistant answer in "
        "the trace's spans"
    )


def test_bad_jsonl_records_name_file_line_and_field_and_keep_the_good(tmp_path: Path) -> None:
    good = {"question": "Q?", "answer": "A.", "timestamp": "2026-01-31T10:00:00Z"}
    path = tmp_path / "log.jsonl"
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                "{not json",
                json.dumps({**good, "answer": ""}),
                json.dumps({**good, "timestamp": "yesterday"}),
                json.dumps({**good, "contexts": 5}),
                "",
                json.dumps({**good, "question": "Q2?"}),
            ]
        ),
        "utf-8",
    )
    read = read_location(str(path))
    assert [i.question for i in read.interactions] == ["Q?", "Q2?"]
    texts = [p.text() for p in read.problems]
    assert texts[0].startswith(f"{path} line 2: not valid JSON")
    assert texts[1] == f"{path} line 3, field 'answer': missing or empty"
    assert texts[2].startswith(f"{path} line 4, field 'timestamp': 'yesterday' is not a time")
    assert texts[3] == f"{path} line 5, field 'contexts': a int where a list of texts was expected"
    # no id: a content hash, the same for a re-delivered copy
    assert read.interactions[0].id_kind == "content"
    again = read_location(str(path)).interactions[0]
    assert again.id == read.interactions[0].id and again.id.startswith("sha256:")


def test_bedrock_bodies_stored_apart_in_s3_are_read_bounded_and_named_when_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Bodies over 100 KB that Bedrock wrote apart (``inputBodyS3Path`` /
    ``outputBodyS3Path``) are read with the logs' S3 client, gzip or not, and give the same
    interaction as the body inline; one over the bound, or missing, is a problem naming the
    record and the path while the others are kept."""
    import boto3
    from moto import mock_aws

    from evalrunner.monitor.sources import bedrock_logs

    body = gzip.decompress((SAMPLES / "bedrock-invocations.json.gz").read_bytes()).decode()
    records = [json.loads(line) for line in body.splitlines()]
    inline = read_location(str(SAMPLES / "bedrock-invocations.json.gz")).interactions
    big = "s3://hr-logs/large/"
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="hr-logs")
        stored = [dict(r, input=dict(r["input"]), output=dict(r["output"])) for r in records]
        # 0: the input body gzip; 1: the output body plain JSON; 2: over the bound; 3: missing
        s3.put_object(
            Bucket="hr-logs",
            Key="large/0_input.json.gz",
            Body=gzip.compress(json.dumps(stored[0]["input"].pop("inputBodyJson")).encode()),
        )
        stored[0]["input"]["inputBodyS3Path"] = big + "0_input.json.gz"
        s3.put_object(
            Bucket="hr-logs",
            Key="large/1_output.json",
            Body=json.dumps(stored[1]["output"].pop("outputBodyJson")).encode(),
        )
        stored[1]["output"]["outputBodyS3Path"] = big + "1_output.json"
        s3.put_object(Bucket="hr-logs", Key="large/2_output.json", Body=b"[" + b" " * 400 + b"]")
        del stored[2]["output"]["outputBodyJson"]
        stored[2]["output"]["outputBodyS3Path"] = big + "2_output.json"
        del stored[3]["input"]["inputBodyJson"]
        stored[3]["input"]["inputBodyS3Path"] = big + "3_input.json"
        log = "\n".join(json.dumps(r) for r in stored).encode()
        s3.put_object(Bucket="hr-logs", Key="AWSLogs/inv.json.gz", Body=gzip.compress(log))
        monkeypatch.setattr(bedrock_logs, "MAX_BODY_BYTES", 300)
        read = read_location("s3://hr-logs/AWSLogs/", "bedrock-invocations", s3=s3)
    assert [(i.id, i.question, i.answer) for i in read.interactions] == [
        (i.id, i.question, i.answer) for i in inline[:2]
    ]
    too_big, missing = read.problems
    assert (too_big.line, too_big.field) == (3, "outputBodyS3Path")
    assert too_big.message == (
        f"record {records[2]['requestId']!r}: the body at {big}2_output.json is over 300 "
        "bytes and is not read (the monitor scores bodies up to that size)"
    )
    assert (missing.line, missing.field) == (4, "inputBodyS3Path")
    assert records[3]["requestId"] in missing.message and "NoSuchKey" in missing.message
    assert f"{big}3_input.json" in missing.message


def test_agent_trace_with_an_error_event_is_a_problem(tmp_path: Path) -> None:
    lines = (SAMPLES / "bedrock-agent-traces.jsonl").read_text("utf-8").splitlines()
    bad = json.loads(lines[0])
    bad["completion"] = [{"throttlingException": {"message": "Rate exceeded"}}]
    path = tmp_path / "agent.jsonl"
    path.write_text("\n".join([json.dumps(bad), lines[1]]), "utf-8")
    read = read_location(str(path), "bedrock-agent-traces")
    assert [i.id for i in read.interactions] == ["agent-req-3002"]
    (problem,) = read.problems
    assert problem.line == 1 and problem.field == "completion"
    assert "Rate exceeded" in problem.message


def test_a_gzip_bomb_is_refused_as_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalrunner.monitor import locations

    monkeypatch.setattr(locations, "MAX_FILE_BYTES", 1000)
    (tmp_path / "big.jsonl.gz").write_bytes(gzip.compress(b" " * 5000))
    (tmp_path / "ok.jsonl").write_text(
        json.dumps({"question": "Q", "answer": "A", "timestamp": 1769853600}), "utf-8"
    )
    read = read_location(str(tmp_path))
    assert len(read.interactions) == 1
    assert "unpacks to over 1,000 bytes" in read.problems[0].message


def test_a_folder_is_read_one_file_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder (or prefix) of many large logs must not be held in memory all at once: each
    file's bytes are read, parsed and let go before the next, with no more than the
    read-ahead budget fetched ahead (else 100 files near the 256 MiB limit need 25 GiB)."""
    import tracemalloc

    from evalrunner.monitor import locations

    monkeypatch.setattr(locations, "READ_AHEAD_BYTES", 2_500_000)  # two of these files
    pad = "x" * 1_000_000
    for n in range(20):
        record = {"id": f"r{n}", "question": "Q", "answer": "A", "timestamp": 1769853600}
        (tmp_path / f"part-{n:02}.jsonl").write_text(json.dumps({**record, "pad": pad}), "utf-8")
    tracemalloc.start()
    try:
        read = read_location(str(tmp_path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(read.interactions) == 20
    assert peak < 8_000_000  # a few copies of two files, not twenty files


def test_a_problem_line_never_echoes_personal_data_or_a_whole_huge_value(tmp_path: Path) -> None:
    """Problem lines go to the terminal, --json, the deployed function's reply and its
    CloudWatch log: a bad field's value quoted in them is masked like the texts scored, and
    cut, so a megabyte-long bad value does not fill the log."""
    log = tmp_path / "app.jsonl"
    records = [
        {"id": "p1", "question": "q", "answer": "a", "timestamp": "mail jo@ex.com 4155550132"},
        {"id": "p2", "question": "q", "answer": "a", "timestamp": "y" * 100_000},
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in records), "utf-8")
    first, second = (p.text() for p in read_location(str(log)).problems)
    assert "jo@ex.com" not in first and "4155550132" not in first
    assert "<EMAIL_1>" in first and "field 'timestamp'" in first and "line 1" in first
    assert len(second) < 1000 and "ISO 8601" in second


def test_an_s3_log_gone_between_listing_and_reading_is_that_files_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Log delivery and lifecycle rules delete objects while a monitor runs: an object listed
    and then gone (or denied) is a problem naming it; the other files are read."""
    import boto3
    from moto import mock_aws

    from evalrunner.monitor.locations import list_files

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    record = {"id": "r1", "question": "Q", "answer": "A", "timestamp": 1769853600}
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="model-logs")
        for key in ("p/a.jsonl", "p/b.jsonl"):
            s3.put_object(Bucket="model-logs", Key=key, Body=json.dumps(record).encode())
        gone, kept = list_files("s3://model-logs/p/", None, s3).files
        s3.delete_object(Bucket="model-logs", Key="p/a.jsonl")
        with pytest.raises(MonitorError, match=r"s3://model-logs/p/a.jsonl: cannot be read"):
            gone.read()
        assert json.loads(kept.read())["id"] == "r1"


@pytest.mark.parametrize("first", ["head", "tail"])
def test_an_otel_trace_split_across_files_is_one_interaction(tmp_path: Path, first: str) -> None:
    """Each trace's spans cut in two, the halves in two files read in either order: the same
    interactions (ids, questions, answers, contexts, steps) as the whole file gives."""
    whole = read_location(str(SAMPLES / "otel-genai-traces.json"), "otel")
    export = json.loads((SAMPLES / "otel-genai-traces.json").read_text("utf-8"))
    head: list[object] = []
    tail: list[object] = []
    for resource in export["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            seen: dict[str, int] = {}
            for span in scope["spans"]:
                n = seen[span["traceId"]] = seen.get(span["traceId"], 0) + 1
                (head if n == 1 else tail).append(span)
    assert head and tail
    names = (
        {"head": "a.json", "tail": "b.json"}
        if first == "head"
        else {
            "head": "b.json",
            "tail": "a.json",
        }
    )
    for part, spans in (("head", head), ("tail", tail)):
        batch = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
        (tmp_path / names[part]).write_text(json.dumps(batch), "utf-8")
    split = read_location(str(tmp_path), "otel")
    assert split.problems == [] and split.files == 2
    assert [i.model_dump(exclude={"origin"}) for i in split.interactions] == [
        i.model_dump(exclude={"origin"}) for i in whole.interactions
    ]
    # the origin names where the trace starts: the file holding its first span
    assert {i.origin for i in split.interactions} == {str(tmp_path / names["head"])}


def test_a_bedrock_body_stored_apart_is_not_fetched_again_for_a_record_already_taken(
    tmp_path: Path,
) -> None:
    """The watermark's duplicates are dropped before a body stored apart is fetched: a
    record read again inside the lateness window costs no GetObject of its body."""
    import boto3
    from moto import mock_aws

    from evalrunner.monitor.runner import MonitorOptions, commit, plan
    from evalrunner.monitor.watermark import LocalWatermarks

    body = gzip.decompress((SAMPLES / "bedrock-invocations.json.gz").read_bytes()).decode()
    records = [json.loads(line) for line in body.splitlines()]
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="hr-logs")
        for n, record in enumerate(records):
            key = f"large/{n}_output.json"
            s3.put_object(
                Bucket="hr-logs", Key=key, Body=json.dumps(record["output"].pop("outputBodyJson"))
            )
            record["output"]["outputBodyS3Path"] = f"s3://hr-logs/{key}"
        log = "\n".join(json.dumps(r) for r in records).encode()
        s3.put_object(Bucket="hr-logs", Key="AWSLogs/inv.json.gz", Body=gzip.compress(log))
        fetched: list[str] = []
        s3.meta.events.register(
            "provide-client-params.s3.GetObject", lambda params, **_: fetched.append(params["Key"])
        )
        store = LocalWatermarks(tmp_path)
        options = MonitorOptions(source="s3://hr-logs/AWSLogs/", name="prod")
        first = plan(options, store, s3=s3)
        assert len(first.chosen) == 4 and first.problems == []
        assert sorted(k for k in fetched if k.startswith("large/")) == [
            f"large/{n}_output.json" for n in range(4)
        ]
        commit(first, store, "run-1", datetime(2026, 2, 1, tzinfo=UTC))
        fetched.clear()
        second = plan(options, store, s3=s3)
    assert second.chosen == [] and second.duplicates == 4 and second.found == 4
    assert fetched == ["AWSLogs/inv.json.gz"]  # the log again, none of the bodies


def test_an_s3_prefix_is_read_concurrently_bounded_and_in_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Many small log files under a prefix are fetched several at once (S3's latency per
    object, not its bandwidth, is what a serial read waits on), never more than the bound
    of readers nor of stored bytes ahead, and the interactions come in the listing's order
    as a serial read gives them; a file that cannot be read is still its own problem."""
    import threading

    import boto3
    from moto import mock_aws

    from evalrunner.monitor import locations

    record = {"question": "q", "answer": "a", "timestamp": "2026-01-31T12:00:00Z"}
    in_flight = {"now": 0, "most": 0}
    lock = threading.Lock()

    def started(**_: object) -> None:
        with lock:
            in_flight["now"] += 1
            in_flight["most"] = max(in_flight["most"], in_flight["now"])
        threading.Event().wait(0.02)  # S3's first-byte latency, so reads overlap

    def ended(**_: object) -> None:
        with lock:
            in_flight["now"] -= 1

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="app-logs")
        for n in range(40):
            body = json.dumps({**record, "id": f"r{n:03}", "question": f"q{n}"}) + "\n"
            s3.put_object(Bucket="app-logs", Key=f"p/{n:03}.jsonl", Body=body.encode())
        s3.meta.events.register("before-send.s3.GetObject", started)
        s3.meta.events.register("after-call.s3.GetObject", ended)
        s3.meta.events.register("after-call-error.s3.GetObject", ended)
        read = read_location("s3://app-logs/p/", "jsonl", s3=s3)
        assert [i.id for i in read.interactions] == [f"r{n:03}" for n in range(40)]
        assert 1 < in_flight["most"] <= locations.MAX_READERS

        # the bytes read ahead are bounded too: with room for two files, two at most
        size = s3.head_object(Bucket="app-logs", Key="p/000.jsonl")["ContentLength"]
        monkeypatch.setattr(locations, "READ_AHEAD_BYTES", 2 * size + 1)
        in_flight["most"] = 0
        s3.delete_object(Bucket="app-logs", Key="p/007.jsonl")  # listed, then gone
        listing = locations.list_files("s3://app-logs/p/", None, s3)
        s3.delete_object(Bucket="app-logs", Key="p/008.jsonl")
        fetched = list(locations.read_ahead(listing.files))
        assert [f.name for f, _ in fetched] == [f.name for f in listing.files]
        assert 1 < in_flight["most"] <= 2
        (gone,) = [data for _, data in fetched if isinstance(data, MonitorError)]
        assert "p/008.jsonl: cannot be read" in gone.message


def test_gzip_logs_fetched_ahead_are_held_packed_not_unpacked(tmp_path: Path) -> None:
    """The read-ahead budget counts stored bytes, so what it holds must be the stored bytes:
    gzip logs (Bedrock writes .json.gz) fetched ahead and unpacked at once would hold eight
    files of up to 256 MiB each, far past the budget. Each is unpacked at its turn."""
    import threading
    import tracemalloc

    from evalrunner.monitor.locations import LogFile, list_files, read_ahead

    pad = "x" * 3_000_000  # 3 MB of text that packs to a few KB
    for n in range(10):
        record = {"id": f"r{n}", "question": "Q", "answer": "A", "timestamp": 1769853600}
        body = json.dumps({**record, "pad": pad}).encode()
        (tmp_path / f"part-{n:02}.jsonl.gz").write_bytes(gzip.compress(body))
    files = list_files(str(tmp_path), None).files
    fetched = threading.Semaphore(0)

    def signalling(read: Callable[[], bytes]) -> Callable[[], bytes]:
        def done() -> bytes:  # says when it is done, so the test can wait for all
            try:
                return read()
            finally:
                fetched.release()

        return done

    counted = [LogFile(f.name, f.modified, signalling(f.read), f.size) for f in files]
    tracemalloc.start()
    try:
        sizes = []
        for number, (_, data) in enumerate(read_ahead(counted)):
            if number == 0:
                for _ in range(8):  # the files fetched ahead are all in memory now
                    fetched.acquire(timeout=30)
            assert isinstance(data, bytes)
            sizes.append(len(data))
            del data
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(sizes) == 10 and min(sizes) > 3_000_000  # each handed on unpacked
    assert peak < 12_000_000  # one file unpacked at a time (eight at once: over 24 MB)


def test_an_s3_object_over_the_size_limit_is_refused_by_its_listed_size_unread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A log object bigger than a file may be (256 MiB) is refused by the size its listing
    gives, never downloaded: reading up to four times the limit of it first could exhaust
    a small monitor function (512 MB) and lose every other file of the run with it."""
    import boto3
    from moto import mock_aws

    from evalrunner.monitor import locations

    monkeypatch.setattr(locations, "MAX_FILE_BYTES", 1_000)
    record = {"id": "r1", "question": "Q", "answer": "A", "timestamp": 1769853600}
    fetched: list[str] = []

    def fetching(params: dict[str, str], **_: object) -> None:
        fetched.append(params["Key"])

    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="app-logs")
        s3.put_object(Bucket="app-logs", Key="p/a.jsonl", Body=json.dumps(record).encode())
        huge = (json.dumps({**record, "id": "r2"}) + "\n").encode() * 100  # ~8 KB
        s3.put_object(Bucket="app-logs", Key="p/b.jsonl", Body=huge)
        s3.meta.events.register("provide-client-params.s3.GetObject", fetching)
        read = read_location("s3://app-logs/p/", "jsonl", s3=s3)
    assert [i.id for i in read.interactions] == ["r1"]
    assert fetched == ["p/a.jsonl"]  # the big one was never downloaded
    (problem,) = read.problems
    assert "p/b.jsonl" in problem.file and "split the log" in problem.message
