"""What bench/peers.py measures, apart from how it runs it (standard library only, so the unit
test and every peer's interpreter can import it): the workloads' cases, the loopback target's
latency for each case, the ideal a run bound only by its target would take, and the ratio
table's arithmetic.

The target's latency is a function of the case, not of the order requests arrive in: case
``i`` always waits ``latency_for(i, ...)``, so every tool sees the same draws whatever order
and concurrency it calls in, and the ideal is computed from the very latencies served.
"""

from __future__ import annotations

import math
import random
import re
from dataclasses import dataclass

#: The target reads the case index from the question, e.g. "How many days for item 17?"
QUESTION = "How many days for item {i}?"
_INDEX = re.compile(r"item (\d+)")


def question(i: int) -> str:
    return QUESTION.format(i=i)


def answer(question_text: str) -> str:
    """What the loopback target answers (the same text the lexical peers are handed)."""
    return f"The answer to {question_text} is 42 days."


def reference(i: int) -> str:
    return f"Item {i} gets 42 days."


def case_index(question_text: str) -> int | None:
    """The case a request is for, read from its question; None for anything else (a probe)."""
    match = _INDEX.search(question_text)
    return int(match.group(1)) if match else None


def latency_for(i: int, low: float, high: float, seed: int = 31) -> float:
    """Seconds the target waits before answering case ``i``: uniform in [low, high], drawn
    from a generator seeded by (seed, i), so the same case waits the same in every run."""
    if high <= low:
        return low
    return random.Random(seed * 1_000_003 + i).uniform(low, high)


def ideal_seconds(latencies: list[float], concurrency: int) -> float:
    """What a run bound only by its target takes for its calls: the total latency spread over
    ``concurrency`` slots (sum / concurrency), and never less than the slowest single call."""
    if not latencies:
        return 0.0
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    return max(sum(latencies) / concurrency, max(latencies))


@dataclass(frozen=True)
class Workload:
    """One row group of the ratio table: what is run, on how many cases, against what."""

    key: str
    title: str
    cases: int
    quick_cases: int
    low: float = 0.0
    high: float = 0.0
    concurrency: int = 10
    peers: tuple[str, ...] = ()

    def size(self, quick: bool) -> int:
        return self.quick_cases if quick else self.cases

    def latencies(self, quick: bool) -> list[float]:
        return [latency_for(i, self.low, self.high) for i in range(self.size(quick))]

    def ideal(self, quick: bool) -> float:
        return ideal_seconds(self.latencies(quick), self.concurrency)


WORKLOADS: dict[str, Workload] = {
    w.key: w
    for w in (
        Workload(
            "small",
            "5 cases, loopback target (instant), ROUGE; whole process",
            5,
            5,
            peers=("promptfoo", "ragas"),
        ),
        Workload(
            "io",
            "300 cases, target answering in 0.5-1.5 s, concurrency 20; whole run vs ideal",
            300,
            60,
            low=0.5,
            high=1.5,
            concurrency=20,
            peers=("promptfoo",),
        ),
        Workload(
            "lexical",
            "2,000 cases, HTTP target (instant), ROUGE + BLEU, reports; CPU, imports included",
            2000,
            200,
            peers=("ragas", "floor"),
        ),
        Workload(
            "judge",
            "the five RAG metrics, counting fake judge; calls and prompt characters per case",
            0,
            0,
            peers=("deepeval", "ragas"),
        ),
    )
}

#: The figures compared, in the table's order; "lower is better" for each.
FIGURES = ("wall_s", "cpu_s", "peak_rss_mib", "calls_per_case", "prompt_chars_per_case")
#: Per-tool figures shown as they are (not as ratios): the I/O-bound run against its ideal.
OWN_FIGURES = ("whole_vs_ideal", "calls_vs_ideal", "startup_s", "tail_s")


def median(values: list[float]) -> float | None:
    values = sorted(v for v in values if v is not None and not math.isnan(v))
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def ratio(ours: float | None, theirs: float | None) -> float | None:
    """evalrunner / peer, or None where either side has no figure (never a made-up number)."""
    if ours is None or theirs is None or theirs == 0:
        return None
    return ours / theirs


def summarise(rows: list[dict]) -> dict[tuple[str, str], dict[str, float | None]]:
    """Median of each figure per (workload, tool) over the repetitions that succeeded."""
    grouped: dict[tuple[str, str], list[dict]] = {}
    for row in rows:
        if row.get("missing") or row.get("exit_code", 0) != 0:
            continue
        grouped.setdefault((row["workload"], row["tool"]), []).append(row)
    return {
        key: {
            f: median([r[f] for r in group if r.get(f) is not None])
            for f in (*FIGURES, *OWN_FIGURES)
        }
        for key, group in grouped.items()
    }


def _cell(value: float | None) -> str:
    return "missing" if value is None else f"{value:.2f}x"


def ratio_table(rows: list[dict], workloads: list[Workload]) -> list[str]:
    """Markdown: one line per (workload, peer), evalrunner / peer for each figure both sides
    have (``—`` where neither tool reports the figure, ``missing`` where the peer did not run
    or failed)."""
    medians = summarise(rows)
    why = {(r["workload"], r["tool"]): r["missing"] for r in rows if r.get("missing")} | {
        (r["workload"], r["tool"]): f"exit {r['exit_code']}"
        for r in rows
        if not r.get("missing") and r.get("exit_code", 0) != 0
    }
    out = [
        "| workload | peer | " + " | ".join(FIGURES) + " | note |",
        "|---|---|" + "---:|" * len(FIGURES) + "---|",
    ]
    for workload in workloads:
        ours = medians.get((workload.key, "evalrunner"))
        for peer in workload.peers:
            theirs = medians.get((workload.key, peer))
            cells = []
            for figure in FIGURES:
                a = ours.get(figure) if ours else None
                b = theirs.get(figure) if theirs else None
                reported = any(
                    r.get(figure) is not None
                    for r in rows
                    if r["workload"] == workload.key and r["tool"] in ("evalrunner", peer)
                )
                cells.append(_cell(ratio(a, b)) if reported else "—")
            note = why.get((workload.key, peer)) or why.get((workload.key, "evalrunner")) or ""
            out.append(f"| {workload.key} | {peer} | " + " | ".join(cells) + f" | {note} |")
    return out


def medians_table(rows: list[dict], workloads: list[Workload]) -> list[str]:
    """Markdown: each tool's own medians (seconds, MiB, calls, and the I/O run against its
    ideal), so the ratios above can be checked and read in absolute terms."""
    medians = summarise(rows)
    figures = (*FIGURES, *OWN_FIGURES)
    out = [
        "| workload | tool | reps | " + " | ".join(figures) + " |",
        "|---|---|---:|" + "---:|" * len(figures),
    ]
    for workload in workloads:
        for tool in ("evalrunner", *workload.peers):
            got = medians.get((workload.key, tool))
            reps = sum(
                1
                for r in rows
                if r["workload"] == workload.key
                and r["tool"] == tool
                and not r.get("missing")
                and r.get("exit_code", 0) == 0
            )
            cells = ["—" if not got or got[f] is None else f"{got[f]:g}" for f in figures]
            out.append(f"| {workload.key} | {tool} | {reps} | " + " | ".join(cells) + " |")
    return out
