"""Issue 34 item 2: the watermark takes each interaction once: a second run over the same logs
takes nothing, a late record inside the allowed lateness is taken once, one older than it is
not, and a duplicated record is taken once."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evalrunner.monitor.model import Interaction, MonitorError
from evalrunner.monitor.runner import MonitorOptions, commit, plan
from evalrunner.monitor.watermark import LocalWatermarks, Watermark, fresh

T0 = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)
NOW = datetime(2026, 2, 1, tzinfo=UTC)


def item(id_: str, minutes: float) -> Interaction:
    return Interaction(
        id=id_,
        id_kind="record",
        question=f"q {id_}",
        answer="a",
        timestamp=T0 + timedelta(minutes=minutes),
        origin="log",
        source="jsonl",
    )


def test_second_run_takes_nothing_new() -> None:
    mark = fresh("m", "logs", 3600)
    batch = [item("a", 0), item("b", 5)]
    first = mark.select(batch, None)
    assert [i.id for i in first.new] == ["a", "b"]
    mark = mark.advanced(first.new, "run-1", NOW)
    again = mark.select(batch, None)
    assert again.new == [] and again.duplicates == 2
    assert mark.event_time == T0 + timedelta(minutes=5) and mark.runs == ["run-1"]


def test_late_record_inside_the_window_is_taken_once_older_ones_not() -> None:
    mark = fresh("m", "logs", 3600).advanced([item("a", 120)], "run-1", NOW)
    late = item("late", 90)  # 30 minutes behind the watermark, lateness one hour
    too_late = item("old", 30)  # 90 minutes behind
    second = mark.select([item("a", 120), late, too_late], None)
    assert [i.id for i in second.new] == ["late"]
    assert second.too_late == 1 and second.duplicates == 1
    mark = mark.advanced(second.new, "run-2", NOW)
    assert mark.event_time == T0 + timedelta(minutes=120)  # a late record never moves it back
    third = mark.select([late], None)
    assert third.new == [] and third.duplicates == 1


def test_duplicates_in_one_batch_are_taken_once() -> None:
    selection = fresh("m", "logs", 3600).select([item("a", 0), item("a", 0), item("b", 1)], None)
    assert [i.id for i in selection.new] == ["a", "b"] and selection.duplicates == 1


def test_ids_older_than_the_window_are_dropped_from_the_set() -> None:
    mark = fresh("m", "logs", 600).advanced([item("a", 0), item("b", 8)], None, NOW)
    assert set(mark.decided) == {mark.key("a"), mark.key("b")}
    mark = mark.advanced([item("c", 60)], None, NOW)
    assert set(mark.decided) == {
        mark.key("c")
    }  # a and b are before the floor (50 min): too late anyway
    assert mark.select([item("a", 0)], None).too_late == 1


def test_since_is_a_floor_that_does_not_decide() -> None:
    mark = fresh("m", "logs", 3600)
    selection = mark.select([item("a", 0), item("b", 30)], T0 + timedelta(minutes=10))
    assert [i.id for i in selection.new] == ["b"] and selection.before_since == 1


def test_local_store_round_trip_and_plan(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        '{"id": "x", "question": "Q", "answer": "A", "timestamp": "2026-01-31T12:00:00Z"}\n',
        "utf-8",
    )
    store = LocalWatermarks(tmp_path / "out")
    options = MonitorOptions(source=str(log), name="prod")
    first = plan(options, store)
    assert [i.id for i in first.chosen] == ["x"]
    commit(first, store, "run-1", NOW)
    saved = store.load("prod")
    assert isinstance(saved, Watermark) and saved.decided == {saved.key("x"): T0}
    assert (tmp_path / "out" / "monitor" / "prod" / "watermark.json").is_file()
    assert plan(options, store).chosen == []
    # the same name over another source is refused rather than mixing two watermarks
    with pytest.raises(MonitorError, match="give this source its own --name"):
        plan(MonitorOptions(source=str(tmp_path), name="prod"), store)


def test_a_damaged_watermark_says_how_to_start_afresh(tmp_path: Path) -> None:
    store = LocalWatermarks(tmp_path)
    store.path("prod").parent.mkdir(parents=True)
    store.path("prod").write_text("{}", "utf-8")
    with pytest.raises(MonitorError, match="move it away to start afresh"):
        store.load("prod")


def test_two_local_monitors_of_one_name_do_not_run_at_once(tmp_path: Path) -> None:
    store = LocalWatermarks(tmp_path)
    with store.locked("prod"), pytest.raises(MonitorError, match="another monitor run"):
        with store.locked("prod"):
            pass


def test_a_stopped_run_takes_only_what_it_scored(tmp_path: Path) -> None:
    import json

    from evalrunner.monitor.runner import as_far_as, case_id, scored_cases
    from evalrunner.monitor.sampling import Sample

    log = tmp_path / "log.jsonl"
    lines = [
        {"id": f"r{i}", "question": "Q", "answer": "A", "timestamp": f"2026-01-31T12:0{i}:00Z"}
        for i in range(4)
    ]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), "utf-8")
    store = LocalWatermarks(tmp_path / "out")
    found = plan(MonitorOptions(source=str(log), sample=Sample(count=3), seed=1), store)
    left_out = {i.id for i in found.new} - {i.id for i in found.chosen}
    first, second, third = found.chosen
    report = tmp_path / "report.json"
    rows = [
        {"case_id": case_id(first), "status": "ok"},
        {"case_id": case_id(second), "status": "not_run"},
        {"case_id": case_id(third), "status": "task_failed"},
    ]
    report.write_text(json.dumps({"rows": rows}), "utf-8")
    assert scored_cases(report) == {case_id(first)}
    commit(as_far_as(found, scored_cases(report)), store, "stopped", NOW)
    again = plan(MonitorOptions(source=str(log), sample=Sample(count=3), seed=1), store)
    assert {i.id for i in again.new} == {second.id, third.id}
    assert left_out.isdisjoint(i.id for i in again.new)


def test_a_hold_keeps_an_unscored_interaction_new_however_long_the_batch() -> None:
    mark = fresh("m", "logs", 600)
    batch = [item("early", 0), item("late", 600)]  # ten hours apart, lateness ten minutes
    mark = mark.advanced([batch[1]], "stopped", NOW, hold=batch[0].timestamp)
    assert mark.event_time == batch[0].timestamp
    assert [i.id for i in mark.select(batch, None).new] == ["early"]


def test_a_record_from_the_future_does_not_push_the_watermark_past_now() -> None:
    """A clock-skewed (or hostile) record stamped years ahead must not make every later
    honest record 'too late': the watermark moves no further than the run's clock."""
    mark = fresh("m", "logs", 3600)
    future = Interaction(
        id="future",
        id_kind="record",
        question="q",
        answer="a",
        timestamp=datetime(2099, 1, 1, tzinfo=UTC),
        origin="log",
        source="jsonl",
    )
    mark = mark.advanced([item("a", 0), future], "run-1", NOW)
    assert mark.event_time == NOW
    honest = item("next", 24 * 60 - 1)  # a minute before NOW, logged after the future one
    second = mark.select([future, honest], None)
    assert [i.id for i in second.new] == ["next"] and second.duplicates == 1
    assert mark.key("future") in mark.decided  # still taken once, though after the floor for years


def test_ids_that_read_alike_as_case_ids_stay_distinct() -> None:
    """'c/1' and 'c:1' (and two long ids sharing a 120-character prefix) must not become one
    case id: the suite would refuse the duplicate and the whole run would be lost."""
    from evalrunner.monitor.runner import case_id

    ids = ["c/1", "c:1", "c-1", "x" * 130 + "1", "x" * 130 + "2"]
    cases = [case_id(item(i, 0)) for i in ids]
    assert len(set(cases)) == len(ids)
    assert cases[2] == "c-1"  # an id that is already a good case id is kept as it is
    assert all(len(c) <= 120 for c in cases)


def test_python_rows_with_a_lone_surrogate_make_a_readable_suite(tmp_path: Path) -> None:
    """A monitor run (and evalrunner.run(suite=[...])) writes Python rows as a suite file; a
    lone surrogate from a JSON log crashed that write and lost the whole run."""
    from evalrunner.api.inputs import suite_file
    from evalrunner.monitor.runner import suite_rows
    from evalrunner.suite.readers import read_suite_file

    odd = item("s1", 0).model_copy(update={"question": "q \ud800", "answer": "a \x07"})
    path = suite_file(suite_rows([odd], mask_pii=True), tmp_path, "monitor")
    (case,) = read_suite_file(path).cases
    assert case.question == "q \ufffd"


def test_a_source_folder_holding_out_does_not_read_the_monitors_own_reports(
    tmp_path: Path,
) -> None:
    """`evalrunner monitor . --out .` (or --out inside the log folder): the reports a run
    writes (details.csv has question and answer columns) must not be read back as logs."""
    import json

    (tmp_path / "app.jsonl").write_text(
        json.dumps(
            {"id": "r1", "question": "Q", "answer": "A", "timestamp": "2026-01-31T12:00:00Z"}
        )
        + "\n",
        "utf-8",
    )
    for folder in ("test-reports/monitor-x", "runs/1", "monitor/monitor-x"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "261127-details.csv").write_text("question,answer\nQ2,A2\n", "utf-8")
    found = plan(MonitorOptions(source=str(tmp_path)), LocalWatermarks(tmp_path))
    assert found.files == 1 and found.problems == [] and [i.id for i in found.new] == ["r1"]


def test_an_id_reused_for_another_record_is_not_passed_over_silently() -> None:
    """A log whose 'id' is a per-session counter reuses ids: the later record (another time)
    is no re-delivery. It is still passed over (the id is the key), but a problem line names
    both and how to fix it, rather than counting it a duplicate without a word."""
    mark = fresh("m", "logs", 3600).advanced([item("1", 0)], "run-1", NOW)
    second = mark.select([item("1", 0), item("1", 20), item("2", 21), item("2", 22)], None)
    assert second.duplicates == 3 and [i.id for i in second.new] == ["2"]
    assert len(second.reused) == 2
    assert "'1'" in second.reused[0].message and "--map id=" in second.reused[0].message


def test_personal_data_in_an_id_or_a_session_is_masked_in_the_suite() -> None:
    """Logs often key interactions by the user (``"session_id": "jo@ex.com"``, an id made of
    a phone number): the case id, the interaction_id and session cells reach every report
    and the notification's worst list, so they are masked like the texts."""
    from evalrunner.monitor.runner import case_id, suite_rows

    logged = item("jo@ex.com-7", 0).model_copy(update={"session": "call +1 415-555-0132"})
    (row,) = suite_rows([logged], mask_pii=True)
    flat = json.dumps(row)
    assert "jo@ex.com" not in flat and "555-0132" not in flat
    assert row["interaction_id"] == "<EMAIL_1>-7" and row["session"] == "call <PHONE_1>"
    assert row["id"] == case_id(logged) and row["id"].startswith("EMAIL_1-")
    other = item("ann@ex.com-7", 0)
    assert case_id(other) != case_id(logged)  # two people's ids stay two cases
    (plain,) = suite_rows([logged], mask_pii=False)
    assert plain["interaction_id"] == "jo@ex.com-7"  # --no-mask-pii keeps it as logged


def test_the_stored_watermark_holds_keyed_digests_never_the_ids(tmp_path: Path) -> None:
    """Interaction ids may be production identifiers (a user's e-mail as the key): the file
    keeps a salted HMAC of each, and still takes each interaction once."""
    store = LocalWatermarks(tmp_path)
    ids = ["ann@corp.io", "req-7f3a"]
    mark = fresh("prod", "logs", 3600).advanced([item(i, n) for n, i in enumerate(ids)], "r", NOW)
    store.save(mark)
    text = store.path("prod").read_text("utf-8")
    assert not any(i in text for i in ids)
    loaded = store.load("prod")
    assert loaded is not None
    again = loaded.select([item("ann@corp.io", 0), item("req-7f3a", 1), item("new", 2)], None)
    assert [i.id for i in again.new] == ["new"] and again.duplicates == 2
    # a re-delivered record with another time is still told apart as a reused id
    reused = loaded.select([item("ann@corp.io", 30)], None)
    assert reused.duplicates == 1 and len(reused.reused) == 1
    # two watermarks key the same id differently (a digest is no global pseudonym)
    other = fresh("other", "logs", 3600).advanced([item("ann@corp.io", 0)], "r", NOW)
    assert set(other.decided).isdisjoint(loaded.decided)


def test_a_watermark_written_with_raw_ids_is_read_and_rewritten_as_digests(
    tmp_path: Path,
) -> None:
    store = LocalWatermarks(tmp_path)
    store.path("prod").parent.mkdir(parents=True)
    old = {
        "version": 1,
        "name": "prod",
        "source": "logs",
        "lateness_seconds": 3600,
        "event_time": (T0 + timedelta(minutes=5)).isoformat(),
        "decided": {"ann@corp.io": T0.isoformat(), "b": (T0 + timedelta(minutes=5)).isoformat()},
        "runs": ["run-1"],
    }
    store.path("prod").write_text(json.dumps(old), "utf-8")
    loaded = store.load("prod")
    assert loaded is not None and loaded.runs == ["run-1"]
    selection = loaded.select([item("ann@corp.io", 0), item("b", 5), item("c", 6)], None)
    assert [i.id for i in selection.new] == ["c"] and selection.duplicates == 2
    store.save(loaded.advanced(selection.new, "run-2", NOW))
    text = store.path("prod").read_text("utf-8")
    assert "ann@corp.io" not in text and '"version": 2' in text


def test_a_watermark_that_lost_its_salt_is_refused_not_read_as_empty(tmp_path: Path) -> None:
    store = LocalWatermarks(tmp_path)
    mark = fresh("prod", "logs", 3600).advanced([item("a", 0)], "r", NOW)
    store.save(mark)
    data = json.loads(store.path("prod").read_text("utf-8"))
    del data["salt"]
    store.path("prod").write_text(json.dumps(data), "utf-8")
    with pytest.raises(MonitorError, match="move it away to start afresh"):
        store.load("prod")


def test_a_hand_edited_salt_that_is_not_hex_is_refused_on_load(tmp_path: Path) -> None:
    """A salt the file was not made with (edited by hand, non-ASCII) is refused when the file
    is read, with how to start afresh, not a UnicodeEncodeError at the first id."""
    store = LocalWatermarks(tmp_path)
    store.save(fresh("prod", "logs", 3600).advanced([item("a", 0)], "r", NOW))
    data = json.loads(store.path("prod").read_text("utf-8"))
    data["salt"] = "é" * 32
    store.path("prod").write_text(json.dumps(data), "utf-8")
    with pytest.raises(MonitorError, match="move it away to start afresh"):
        store.load("prod")


def test_a_hand_edited_time_without_a_zone_is_read_as_utc(tmp_path: Path) -> None:
    """An operator who winds the watermark back by hand writes ``2026-01-31T11:00:00``: read
    as UTC (as every time a source reads without a zone is), not compared with the records'
    UTC times as a TypeError that fails every run."""
    store = LocalWatermarks(tmp_path)
    store.save(fresh("prod", "logs", 3600).advanced([item("a", 0)], "r", NOW))
    data = json.loads(store.path("prod").read_text("utf-8"))
    data["event_time"] = "2026-01-31T12:00:00"
    data["decided"] = {k: "2026-01-31T12:00:00" for k in data["decided"]}
    data["pending"] = {"0" * 32: "2026-01-31T11:30:00"}
    store.path("prod").write_text(json.dumps(data), "utf-8")
    loaded = store.load("prod")
    assert loaded is not None and loaded.event_time == T0
    assert loaded.read_from() == T0 - timedelta(minutes=60)
    selection = loaded.select([item("a", 0), item("b", 1), item("old", -90)], None, NOW)
    assert [i.id for i in selection.new] == ["b"]
    assert selection.duplicates == 1 and selection.too_late == 1


def test_a_duration_or_a_watermark_time_past_what_dates_hold_is_a_clear_error(
    tmp_path: Path,
) -> None:
    """``--lateness 1000000d`` (meaning "never too late") or a watermark wound back by hand
    to year 1 overflowed Python's dates: an OverflowError traceback, every run. A duration
    over a century is refused naming the option; a floor before year 1 is no floor."""
    from evalrunner.monitor.times import duration_seconds, since_time

    with pytest.raises(MonitorError, match=r"--lateness '1000000d'.*36500d"):
        duration_seconds("1000000d", "--lateness")
    with pytest.raises(MonitorError, match="--since"):
        since_time("9999999d", NOW)
    assert duration_seconds("36500d", "--lateness") == 36500 * 86400.0

    store = LocalWatermarks(tmp_path)
    store.save(fresh("prod", "logs", 3600).advanced([item("a", 0)], "r", NOW))
    data = json.loads(store.path("prod").read_text("utf-8"))
    data["event_time"] = "0001-01-01T00:00:00Z"
    store.path("prod").write_text(json.dumps(data), "utf-8")
    loaded = store.load("prod")
    assert loaded is not None and loaded.floor() is None and loaded.read_from() is None
    selection = loaded.select([item("b", 1)], None, NOW)
    assert [i.id for i in selection.new] == ["b"]
    data["lateness_seconds"] = 1e15
    store.path("prod").write_text(json.dumps(data), "utf-8")
    with pytest.raises(MonitorError, match="move it away to start afresh"):
        store.load("prod")
