"""Cost of the CPU evaluator catalog per case (issue #7 goal: ≤ 2 ms median, all together).

A typical case: a 100-word answer and 5 retrieved chunks of 100 words, built from the demo's
policy documents, with every input the catalog reads (condition, expected documents and
contexts, intent, tool, a per-case JSON schema, categories) so that no evaluator skips.
Usage: python bench/bench_cpu_evaluators.py [--cases 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time

from evalrunner.demo.assistant import load_policies
from evalrunner.evaluators import Requirement, Sample, available

LEXICAL = {"Rouge Metric", "BLEU", "Token F1", "Exact match"}


def words(rng: random.Random, pool: list[str], n: int) -> str:
    start = rng.randrange(0, len(pool) - n)
    return " ".join(pool[start : start + n])


def make_samples(n: int) -> list[Sample]:
    rng = random.Random(7)
    pool = " ".join(load_policies().values()).split()
    samples = []
    for i in range(n):
        answer = words(rng, pool, 100)
        samples.append(
            Sample(
                question="How many days of annual leave do full-time employees get per year?",
                case_id=f"c{i}",
                expected_answer=words(rng, pool, 40),
                expected_contexts=[words(rng, pool, 30)],
                expected_documents=["annual-leave.md", "remote-work.md"],
                expected_intent="leave",
                expected_tool="policy_search",
                condition='("days" OR "Days") AND regexp("\\\\d+") AND NOT "salary"',
                categories=["leave", "jailbreak"] if i % 5 == 0 else ["leave"],
                answer=answer,
                contexts=[words(rng, pool, 100) for _ in range(5)],
                documents=["s3://kb/annual-leave.md", "s3://kb/expenses.md", "s3://kb/remote.md"],
                intent="leave" if i % 3 else "benefits",
                tool="policy_search",
                metadata={"json_schema": json.dumps({"type": "object"})},
            )
        )
    return samples


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    args = parser.parse_args()
    samples = make_samples(args.cases)
    cheap = {n: c() for n, c in available().items() if c.requires is Requirement.NOTHING}
    groups = {
        "issue-7 catalog": [n for n in cheap if n not in LEXICAL],
        "all CPU evaluators": list(cheap),
    }
    for s in samples[:20]:  # warm caches (compiled patterns, lazy imports)
        for evaluator in cheap.values():
            evaluator.evaluate(s)
    # Wall time (perf_counter) is what a run waits; CPU time of this thread (thread_time)
    # is what the evaluators cost, without the CPU steal of a shared VM.
    results_by_clock = {}
    for clock_name, clock in (("wall", time.perf_counter), ("cpu", time.thread_time)):
        per_eval: dict[str, list[float]] = {n: [] for n in cheap}
        per_case: list[float] = []
        statuses: dict[str, set[str]] = {n: set() for n in cheap}
        for s in samples:
            total = 0.0
            for name, evaluator in cheap.items():
                t = clock()
                results = evaluator.evaluate(s)
                dt = clock() - t
                per_eval[name].append(dt)
                statuses[name].update(r.status for r in results)
                if name in groups["issue-7 catalog"]:
                    total += dt
            per_case.append(total)
        results_by_clock[clock_name] = (per_eval, per_case, statuses)
    ms = 1000
    print(
        f"{args.cases} cases; per-case time of the issue-7 catalog "
        f"({len(groups['issue-7 catalog'])} evaluators):"
    )
    for clock_name, (per_eval, per_case, _) in results_by_clock.items():
        all_median = statistics.median(
            [sum(per_eval[n][i] for n in cheap) for i in range(args.cases)]
        )
        print(
            f"  {clock_name:4s}: median {statistics.median(per_case) * ms:.3f} ms, "
            f"p90 {statistics.quantiles(per_case, n=10)[-1] * ms:.3f} ms; "
            f"all CPU evaluators incl. lexical: median {all_median * ms:.3f} ms"
        )
    per_eval, _, statuses = results_by_clock["cpu"]
    print("per evaluator (median CPU ms, statuses seen):")
    for name in sorted(per_eval, key=lambda n: -statistics.median(per_eval[n])):
        print(
            f"  {name:28s} {statistics.median(per_eval[name]) * ms:7.3f}  {sorted(statuses[name])}"
        )


if __name__ == "__main__":
    main()
