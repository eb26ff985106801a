"""CPU cost per case of the lexical evaluators (issue 18: ROUGE and BLEU against Ragas's).

Two sets of pairs: bench_cpu_evaluators' typical case (a 100-word answer against a 40-word
expected answer, from the demo's policies) and bench_vs_ragas's (the short answers of
bench_engine's instant target). Each evaluator is timed alone (median of ``time.thread_time``
per case, after a warm-up), then ROUGE + BLEU together per pass; ``--cold`` also times ROUGE
with its stem cache emptied before every case (the cost of a case made only of new words).
Usage: PYTHONPATH=. python bench/bench_lexical.py [--cases 2000] [--cold] [--profile NAME]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_cpu_evaluators import make_samples
from bench_vs_ragas import cases

from evalrunner.evaluators import Sample, resolve

LEXICAL = ["Rouge Metric", "BLEU", "Token F1", "Exact match"]


def ragas_samples(n: int) -> list[Sample]:
    return [
        Sample(question=c["question"], expected_answer=c["reference"], answer=c["response"])
        for c in cases(n)
    ]


def per_case_ms(name: str, samples: list[Sample], cold: bool = False) -> float:
    evaluator = resolve(name)()
    clear = None
    if cold:
        from evalrunner.evaluators.rouge import rouge_token

        clear = rouge_token.cache_clear
    for s in samples[:20]:
        evaluator.evaluate(s)
    times = []
    for s in samples:
        if clear is not None:
            clear()
        t = time.thread_time()
        evaluator.evaluate(s)
        times.append(time.thread_time() - t)
    return statistics.median(times) * 1000


def rouge_bleu_pass_ms(samples: list[Sample]) -> float:
    evaluators = [resolve(n)() for n in ("Rouge Metric", "BLEU")]
    t = time.process_time()
    for s in samples:
        for evaluator in evaluators:
            evaluator.evaluate(s)
    return (time.process_time() - t) / len(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--cold", action="store_true", help="also ROUGE with an empty stem cache")
    parser.add_argument("--profile", metavar="EVALUATOR", help="cProfile one evaluator instead")
    args = parser.parse_args()
    sets = {"100/40 words": make_samples(args.cases), "bench_vs_ragas": ragas_samples(args.cases)}
    if args.profile:
        evaluator = resolve(args.profile)()
        profile = cProfile.Profile()
        profile.runcall(lambda: [evaluator.evaluate(s) for s in sets["100/40 words"]])
        pstats.Stats(profile).sort_stats("tottime").print_stats(15)
        return
    for label, samples in sets.items():
        medians = {name: per_case_ms(name, samples) for name in LEXICAL}
        line = ", ".join(f"{n} {ms:.3f}" for n, ms in medians.items())
        print(f"{label}: median CPU ms per case: {line}; four together {sum(medians.values()):.3f}")
        passes = [round(rouge_bleu_pass_ms(samples), 3) for _ in range(3)]
        print(f"{label}: ROUGE + BLEU, CPU ms per case over 3 passes: {passes}")
        if args.cold:
            print(
                f"{label}: ROUGE, stem cache emptied before each case: "
                f"{per_case_ms('Rouge Metric', samples, cold=True):.3f}"
            )


if __name__ == "__main__":
    main()
