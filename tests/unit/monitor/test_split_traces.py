"""Issue 34: an OpenTelemetry trace whose spans arrive across schedules is scored once, whole.

The rule: a trace is scored once its root span (the one with no parent, which OpenTelemetry
exports last: a parent ends after its children) has been read, or once its newest span is
older than the allowed lateness (then with the spans that came). Until then it is pending:
not scored, not taken, and the files holding its pieces are read again by the next run,
even one older than the watermark's window."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from evalrunner.monitor.runner import MonitorOptions, commit, plan
from evalrunner.monitor.watermark import LocalWatermarks

T = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


def nanos(at: datetime) -> str:
    return str(int(at.timestamp() * 1e9))


def attr(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def span(
    trace: str, name: str, start: datetime, end: datetime, *attrs: dict[str, Any], root: bool
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "traceId": trace,
        "spanId": f"{abs(hash((trace, name))) % 10**16:016x}",
        "name": name,
        "startTimeUnixNano": nanos(start),
        "endTimeUnixNano": nanos(end),
        "attributes": list(attrs),
    }
    if not root:
        found["parentSpanId"] = "00f067aa0ba902b7"
    return found


def retrieval(trace: str, end: datetime) -> dict[str, Any]:
    documents = json.dumps([{"id": "d1", "content": "Leave: 25 days a year."}])
    return span(
        trace,
        "retrieval",
        end - timedelta(seconds=1),
        end,
        attr("gen_ai.operation.name", "retrieval"),
        attr("gen_ai.retrieval.documents", documents),
        root=False,
    )


def chat(trace: str, end: datetime) -> dict[str, Any]:
    return span(
        trace,
        "chat",
        end - timedelta(seconds=2),
        end,
        attr("gen_ai.operation.name", "chat"),
        attr("gen_ai.input.messages", messages("user", "leave? (model prompt)")),
        attr("gen_ai.output.messages", messages("assistant", "draft from the model")),
        root=False,
    )


def agent(trace: str, start: datetime, end: datetime, answer: str) -> dict[str, Any]:
    return span(
        trace,
        "invoke_agent",
        start,
        end,
        attr("gen_ai.operation.name", "invoke_agent"),
        attr("gen_ai.input.messages", messages("user", "How many days of leave?")),
        attr("gen_ai.output.messages", messages("assistant", answer)),
        root=True,
    )


def write(folder: Path, name: str, spans: list[dict[str, Any]], modified: datetime) -> None:
    path = folder / name
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))
    os.utime(path, (modified.timestamp(), modified.timestamp()))


def test_a_trace_is_scored_once_whole_when_its_root_arrives_in_a_later_run(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    # two pieces of trace "t1" without its root (one written 100 minutes ago, before the
    # window the next run reads), and a whole trace "t2"
    old = T - timedelta(minutes=100)
    write(logs, "a1.json", [retrieval("t1", old)], old)
    write(logs, "a2.json", [chat("t1", T - timedelta(minutes=10))], T - timedelta(minutes=10))
    t2 = agent("t2", T - timedelta(minutes=6), T - timedelta(minutes=5), "Ten days.")
    write(logs, "c.json", [t2], T - timedelta(minutes=5))
    store = LocalWatermarks(tmp_path / "out")
    options = MonitorOptions(source=str(logs), name="traces", format="otel")

    first = plan(options, store, now=T)
    assert [i.id for i in first.chosen] == ["t2"] and first.pending == 1
    commit(first, store, "run-1", T)

    root = agent("t1", T - timedelta(minutes=101), T + timedelta(minutes=2), "25 days a year.")
    write(logs, "b.json", [root], T + timedelta(minutes=2))
    second = plan(options, store, now=T + timedelta(minutes=5))
    (trace,) = second.chosen
    assert trace.id == "t1" and second.pending == 0
    assert trace.answer == "25 days a year."  # the root's answer, not the model's draft
    assert trace.contexts == ["Leave: 25 days a year."]  # from the piece 100 minutes old
    commit(second, store, "run-2", T + timedelta(minutes=5))

    third = plan(options, store, now=T + timedelta(minutes=6))
    assert third.chosen == [] and third.new == [] and third.pending == 0


def test_a_trace_whose_root_never_comes_is_scored_with_its_pieces_after_the_lateness(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    write(logs, "a.json", [chat("t1", T), retrieval("t1", T)], T)
    store = LocalWatermarks(tmp_path / "out")
    options = MonitorOptions(source=str(logs), name="traces", format="otel", lateness_seconds=600)
    waiting = plan(options, store, now=T + timedelta(minutes=9))
    assert waiting.chosen == [] and waiting.pending == 1
    commit(waiting, store, None, T + timedelta(minutes=9))
    late = plan(options, store, now=T + timedelta(minutes=11))
    (trace,) = late.chosen
    assert trace.answer == "draft from the model" and late.pending == 0
    commit(late, store, "run-1", T + timedelta(minutes=11))
    assert plan(options, store, now=T + timedelta(minutes=12)).chosen == []


def test_a_root_less_trace_stamped_in_the_future_does_not_wait_forever(tmp_path: Path) -> None:
    """A trace without its root whose spans end a year ahead (a skewed clock, a hostile
    exporter) would stay pending until the clock caught up: never scored, and read again by
    every run. Stamped past the lateness ahead of the run's clock, it is taken as it is,
    as a whole record from the future is."""
    logs = tmp_path / "logs"
    logs.mkdir()
    ahead = T + timedelta(days=365)
    write(logs, "a.json", [chat("t1", ahead), retrieval("t1", ahead)], T)
    store = LocalWatermarks(tmp_path / "out")
    options = MonitorOptions(source=str(logs), name="traces", format="otel", lateness_seconds=600)
    first = plan(options, store, now=T + timedelta(minutes=1))
    assert [i.id for i in first.chosen] == ["t1"] and first.pending == 0
    commit(first, store, "run-1", T + timedelta(minutes=1))
    assert plan(options, store, now=T + timedelta(minutes=2)).chosen == []


def test_a_pending_trace_does_not_send_later_runs_back_to_1970(tmp_path: Path) -> None:
    """The files a pending trace's pieces are in are read again from when its first span
    started. A span without ``startTimeUnixNano`` (or one claiming to start in 1970) must not
    make every run while the trace waits read every file the prefix ever held: a span's
    start is its end where it has none, and a trace is looked for at most a day back from
    its newest span."""
    logs = tmp_path / "logs"
    logs.mkdir()
    undated = chat("t1", T)
    del undated["startTimeUnixNano"]
    early = chat("t2", T)
    early["startTimeUnixNano"] = "1"
    write(logs, "a.json", [undated, early], T)
    store = LocalWatermarks(tmp_path / "out")
    options = MonitorOptions(source=str(logs), name="traces", format="otel")
    waiting = plan(options, store, now=T + timedelta(minutes=1))
    assert waiting.pending == 2
    mark = commit(waiting, store, None, T + timedelta(minutes=1))
    assert mark.pending and min(mark.pending.values()) >= T - timedelta(days=1)


def test_a_first_piece_without_the_question_waits_for_the_rest_not_refused(
    tmp_path: Path,
) -> None:
    """The first piece of a trace is often only its retrieval (the question and answer are
    on the ``invoke_agent`` root, exported last). That piece is pending like any other, not
    a problem line saying "no user message" while its file falls out of the window, so the
    trace is scored whole when the root comes; if the root never comes, it is then the
    problem (never scored with an empty question)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    old = T - timedelta(minutes=100)
    write(logs, "a1.json", [retrieval("t1", old)], old)
    write(logs, "a2.json", [retrieval("t1", T - timedelta(minutes=10))], T - timedelta(minutes=10))
    write(logs, "a3.json", [retrieval("t3", T)], T)  # its root never comes
    t2 = agent("t2", T - timedelta(minutes=6), T - timedelta(minutes=5), "Ten days.")
    write(logs, "c.json", [t2], T - timedelta(minutes=5))
    store = LocalWatermarks(tmp_path / "out")
    options = MonitorOptions(source=str(logs), name="traces", format="otel")

    first = plan(options, store, now=T + timedelta(minutes=1))
    assert [i.id for i in first.chosen] == ["t2"] and first.pending == 2
    assert first.problems == []
    commit(first, store, "run-1", T + timedelta(minutes=1))

    root = agent("t1", T - timedelta(minutes=101), T + timedelta(minutes=2), "25 days a year.")
    write(logs, "b.json", [root], T + timedelta(minutes=2))
    second = plan(options, store, now=T + timedelta(minutes=5))
    (trace,) = second.chosen
    assert trace.id == "t1" and trace.answer == "25 days a year."
    assert trace.contexts == ["Leave: 25 days a year."] * 2  # the piece 100 minutes old too
    assert second.pending == 1 and second.problems == []
    commit(second, store, "run-2", T + timedelta(minutes=5))

    late = plan(options, store, now=T + timedelta(minutes=62))
    assert late.chosen == [] and late.pending == 0
    (problem,) = late.problems
    assert "t3" in problem.message and "no user message" in problem.message
