"""bench/peers.py's arithmetic and workload definitions (issue 31 goal 7): the loopback target's
latency per case, the ideal of the I/O-bound run, the ratio table and the commands each tool
is given. Nothing here installs a peer or times anything."""

from __future__ import annotations

import json
import sys
import urllib.request
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
sys.path.insert(0, str(BENCH))

import peers  # noqa: E402
import peers_workloads as wl  # noqa: E402


def test_latency_is_a_function_of_the_case_within_its_range() -> None:
    draws = [wl.latency_for(i, 0.5, 1.5) for i in range(300)]
    assert all(0.5 <= d <= 1.5 for d in draws)
    assert draws == [wl.latency_for(i, 0.5, 1.5) for i in range(300)]  # same in every run
    assert len(set(draws)) == 300  # drawn, not one value
    assert 0.9 < sum(draws) / 300 < 1.1  # uniform around the middle
    assert wl.latency_for(7, 0.0, 0.0) == 0.0


def test_ideal_is_the_served_latency_spread_over_the_slots() -> None:
    assert wl.ideal_seconds([1.0, 1.0, 2.0, 4.0], 2) == 4.0  # sum 8 / 2
    assert wl.ideal_seconds([1.0, 5.0], 20) == 5.0  # never below the slowest call
    assert wl.ideal_seconds([], 20) == 0.0
    with pytest.raises(ValueError, match="concurrency"):
        wl.ideal_seconds([1.0], 0)
    io = wl.WORKLOADS["io"]
    assert (io.cases, io.low, io.high, io.concurrency) == (300, 0.5, 1.5, 20)
    assert io.ideal(quick=False) == pytest.approx(sum(io.latencies(quick=False)) / 20)
    assert 13.5 < io.ideal(quick=False) < 16.5  # 300 x ~1 s / 20


def test_the_target_waits_per_case_and_answers_what_the_peers_are_handed() -> None:
    target = peers.CaseTarget(wl.WORKLOADS["io"])
    assert target.latency(wl.question(42)) == wl.latency_for(42, 0.5, 1.5)
    assert target.latency("a probe with no case") == 0.5
    assert wl.case_index(wl.question(1234)) == 1234
    with peers.serving(wl.WORKLOADS["small"]) as (served, url):
        body = json.dumps({"question": wl.question(3)}).encode()
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            answer = json.loads(reply.read())["answer"]
    assert answer == wl.answer(wl.question(3))
    assert served.requests == 1


def _row(workload: str, tool: str, **figures: float) -> dict:
    return {"workload": workload, "tool": tool, "exit_code": 0, **figures}


def test_ratio_table_divides_medians_and_marks_missing_peers() -> None:
    rows = [
        _row("io", "evalrunner", wall_s=10.0, cpu_s=4.0, peak_rss_mib=300),
        _row("io", "evalrunner", wall_s=30.0, cpu_s=6.0, peak_rss_mib=340),
        _row("io", "evalrunner", wall_s=20.0, cpu_s=5.0, peak_rss_mib=320),
        _row("io", "promptfoo", wall_s=8.0, cpu_s=2.0, peak_rss_mib=200),
        {**_row("io", "promptfoo", wall_s=1.0), "exit_code": 1},  # a failed rep never counts
        _row("judge", "evalrunner", calls_per_case=5.0, prompt_chars_per_case=9000),
        _row("judge", "deepeval", calls_per_case=15.0, prompt_chars_per_case=27000),
        {"workload": "judge", "tool": "ragas", "missing": "ragas: pip install exited 1"},
    ]
    table = wl.ratio_table(rows, [wl.WORKLOADS["io"], wl.WORKLOADS["judge"]])
    io = next(line for line in table if line.startswith("| io | promptfoo"))
    # medians 20 / 8, 5 / 2, 320 / 200; calls not reported on this workload
    assert io.split(" | ")[2:7] == ["2.50x", "2.50x", "1.60x", "—", "—"]
    assert "exit 1" in io
    deepeval = next(line for line in table if line.startswith("| judge | deepeval"))
    assert deepeval.split(" | ")[2:7] == ["—", "—", "—", "0.33x", "0.33x"]
    ragas = next(line for line in table if line.startswith("| judge | ragas"))
    assert ragas.split(" | ")[5:7] == ["missing", "missing"]
    assert "pip install exited 1" in ragas
    medians = wl.medians_table(rows, [wl.WORKLOADS["io"]])
    assert next(x for x in medians if x.startswith("| io | promptfoo |")).split(" | ")[2] == "1"


def test_each_tool_gets_the_same_cases_and_checks(tmp_path: Path) -> None:
    io, small = wl.WORKLOADS["io"], wl.WORKLOADS["small"]
    cmd = peers.promptfoo_cmd(Path("promptfoo"), tmp_path, "http://127.0.0.1:1/", io, 4)
    config = json.loads((tmp_path / "promptfooconfig.yaml").read_text())
    assert cmd[cmd.index("-j") + 1] == "20"
    assert [t["vars"]["question"] for t in config["tests"]] == [wl.question(i) for i in range(4)]
    assert config["tests"][2]["assert"] == [{"type": "equals", "value": wl.answer(wl.question(2))}]
    ours = peers.evalrunner_cmd("python", tmp_path, "http://127.0.0.1:1/", io, 4)
    assert "--no-preflight" in ours and ours[ours.index("--max-concurrency") + 1] == "20"
    suite = (tmp_path / "suite.csv").read_text().splitlines()
    assert suite[1] == f"c0,{wl.question(0)},{wl.reference(0)}"
    ours_small = peers.evalrunner_cmd("python", tmp_path, "http://127.0.0.1:1/", small, 5)
    assert "--no-preflight" not in ours_small
    assert ours_small[ours_small.index("--metric") + 1] == "Rouge Metric"


def test_options() -> None:
    assert peers.parse(["--quick"]).reps == 1
    assert peers.parse(["--quick", "--reps", "2"]).reps == 2
    with pytest.raises(SystemExit):
        peers.parse(["--only", "small,nonsense"])
