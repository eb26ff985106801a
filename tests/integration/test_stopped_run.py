"""A stopped run keeps its work (issue 27, item 2), through the CLI as a user runs it.

``evalrunner run`` in a child process against a loopback HTTP target that counts what it
answers: the target answers the first cases, then holds the next call; the run is killed
there (``kill -9``, SIGTERM, Ctrl-C); ``--resume <run_id>`` then runs the rest. Every case is
answered exactly once across the two runs, and the resumed run ends with a complete report
set. The call the target was holding when the run died never got its answer back; it is the
one call made again.
"""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.holding_target import HoldingTarget

pytestmark = pytest.mark.slow

CASES = 8
HOLD_AT = 3  # the 4th call is held: three cases finish before the stop
EVALRUNNER = str(Path(sys.executable).parent / "evalrunner")


@pytest.fixture
def target():
    # each question "Question N?" is answered with its expected answer, "Answer N."
    holding = HoldingTarget(
        HOLD_AT, lambda q: f"Answer {q.split()[1].rstrip('?')}.", hold_seconds=60
    )
    yield holding
    holding.close()


def write_suite(tmp_path: Path) -> Path:
    path = tmp_path / "stop.csv"
    path.write_text(
        "id,question,expected_answer\n"
        + "".join(f"c{i},Question {i}?,Answer {i}.\n" for i in range(CASES)),
        encoding="utf-8",
    )
    return path


def command(suite: Path, target: HoldingTarget, out: Path, *extra: str) -> list[str]:
    spec = {"url": f"{target.server.url}/ask", "max_retries": 0, "name": "stoppable"}
    return [
        EVALRUNNER,
        "run",
        "--suite",
        str(suite),
        "--target",
        json.dumps(spec),
        "--metric",
        "Exact match",
        "--max-concurrency",
        "1",
        "--out",
        str(out),
        "--quiet",
        # the pre-flight's probe would be one more call of the first question: these tests
        # count the cases' calls (a resumed run makes no probe)
        "--no-preflight",
        *extra,
    ]


def saved_records(out: Path) -> list[Path]:
    return sorted(out.glob("runs/*/cases/*.json"))


def start_and_wait_for_the_held_call(
    suite: Path, target: HoldingTarget, out: Path
) -> subprocess.Popen[str]:
    """The run in a child process, once it has finished HOLD_AT cases (their records on disk)
    and its next target call is being held."""
    child = subprocess.Popen(
        command(suite, target, out),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with target.lock:
            held = len(target.received) > HOLD_AT
        if held and len(saved_records(out)) >= HOLD_AT:
            return child
        if child.poll() is not None:
            pytest.fail(f"the run ended early: {child.communicate()}")
        time.sleep(0.05)
    child.kill()
    pytest.fail("the run never reached the held call")


def resume(suite: Path, target: HoldingTarget, out: Path, run_id: str):
    return subprocess.run(
        command(suite, target, out, "--resume", run_id),
        capture_output=True,
        text=True,
        timeout=300,
    )


def report_set(out: Path) -> dict[str, dict]:
    """summary.json of every report set under out, by its prefix; each has a manifest."""
    sets = {}
    for summary in sorted(out.glob("test-reports/stoppable/*summary.json")):
        prefix = summary.name[: -len("summary.json")]
        sets[prefix] = json.loads(summary.read_text("utf-8"))
    return sets


def assert_each_case_answered_once(target: HoldingTarget) -> None:
    counts = collections.Counter(target.answered)
    assert sorted(counts) == sorted(f"Question {i}?" for i in range(CASES))
    assert set(counts.values()) == {1}, counts  # none twice
    # the only call made again is the one the target held when the run died: never answered
    again = [q for q, n in collections.Counter(target.received).items() if n > 1]
    assert again == [f"Question {HOLD_AT}?"], target.received


def assert_complete(out: Path, summary: dict) -> None:
    assert summary["partial"] is False and summary["stopped_reason"] is None
    assert summary["items"] == CASES and summary["answered"] == CASES
    assert summary["target_errors"] == 0 and summary["task_failures"] == 0
    assert (out / summary["reports"]["manifest"]).is_file()
    for key in summary["reports"].values():
        assert (out / key).is_file(), key
    assert not (out / "runs").exists()  # the saved records went with the finished run


def test_kill_9_keeps_the_finished_cases_and_resume_runs_only_the_rest(tmp_path, target):
    suite, out = write_suite(tmp_path), tmp_path / "out"
    child = start_and_wait_for_the_held_call(suite, target, out)
    child.kill()  # SIGKILL: no handler runs, nothing is flushed at exit
    child.wait(30)
    target.release()

    # The three finished cases are on disk, whole, under --out.
    records = saved_records(out)
    assert len(records) == HOLD_AT
    assert all(json.loads(p.read_bytes())["status"] == "ok" for p in records)
    run_id = records[0].parent.parent.name

    # A wrong id is bad input, listing the ids that can be resumed; nothing is called.
    calls = len(target.received)
    wrong = resume(suite, target, out, "no-such-run")
    assert wrong.returncode == 2, wrong.stderr
    assert "no-such-run" in wrong.stderr and run_id in wrong.stderr
    assert len(target.received) == calls

    # Resumed: only the cases without a record reach the target.
    done = resume(suite, target, out, run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_each_case_answered_once(target)
    (summary,) = report_set(out).values()
    assert summary["run_id"] == run_id
    assert_complete(out, summary)


@pytest.mark.parametrize(
    ("sig", "reason"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "Ctrl-C")]
)
def test_sigterm_and_ctrl_c_write_partial_reports_then_resume_completes(
    tmp_path, target, sig, reason
):
    suite, out = write_suite(tmp_path), tmp_path / "out"
    child = start_and_wait_for_the_held_call(suite, target, out)
    child.send_signal(sig)
    stdout, stderr = child.communicate(timeout=120)
    assert child.returncode == 3, stdout + stderr
    assert "Traceback" not in stderr
    run_id = saved_records(out)[0].parent.parent.name
    assert f"--resume {run_id}" in stderr and reason in stderr
    # then reported like any other outcome: its verdict is the log's last word
    verdict = [line for line in stdout.splitlines() if line.startswith("verdict: ")]
    assert verdict and verdict[0].startswith("verdict: PARTIAL (exit code 3"), stdout

    # The reports of what finished, marked partial in summary.json and report.html.
    partial = next(iter(report_set(out).values()))
    assert partial["partial"] is True and reason in partial["stopped_reason"]
    assert partial["run_id"] == run_id
    assert partial["answered"] == HOLD_AT
    html = (out / partial["reports"]["html"]).read_text("utf-8")
    assert "Partial run" in html and f"--resume {run_id}" in html
    target.release()

    done = resume(suite, target, out, run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_each_case_answered_once(target)
    sets = report_set(out)
    assert len(sets) == 2
    complete = [s for s in sets.values() if not s["partial"]]
    assert len(complete) == 1 and complete[0]["run_id"] == run_id
    assert_complete(out, complete[0])
    # The partial set is never the finished run's baseline (nor anyone's).
    assert complete[0]["regression"] is None


def test_a_killed_run_is_named_by_the_next_run_and_its_stale_claim_removed(tmp_path, target):
    suite, out = write_suite(tmp_path), tmp_path / "out"
    child = start_and_wait_for_the_held_call(suite, target, out)
    child.kill()
    child.wait(30)
    target.release()
    run_id = saved_records(out)[0].parent.parent.name
    claims = list(out.glob("test-reports/stoppable/*claim.json"))
    assert len(claims) == 1  # the killed run's claim, with no report beside it

    again = subprocess.run(command(suite, target, out), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"run {run_id} was stopped before it finished" in again.stderr
    assert f"--resume {run_id}" in again.stderr
    assert f"removed {claims[0]}" in again.stderr
    assert not claims[0].exists()
    # The killed run's records are still there to resume (the new run is another run).
    assert len(list((out / "runs" / run_id / "cases").glob("*.json"))) == HOLD_AT
