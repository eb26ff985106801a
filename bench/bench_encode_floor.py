"""Model scoring against its floor, one batched ``encode`` (issue 31's check: "model scoring
stays within 1.1x of one batched encode").

On bench_scorer.py's deterministic help-desk suite (``--cases`` x 2 iterations), Answer semantic
similarity as a run computes it, against the least any scorer must do for the same scores:
encoding each distinct text once, in one ``SentenceTransformer.encode`` call (batches of 64,
sentence-transformers' own length sorting), no cosine, no bookkeeping. Both sides use the
model already loaded (its load is outside the clock), a fresh hub per repetition for
evalrunner (so nothing is cached between repetitions), and take turns (interleaved, the
order swapped every repetition) so both see the same machine load.

  (a) evalrunner: ``resolve("Answer semantic similarity")`` with a fresh ``ModelHub``,
      ``evaluate_batch(samples)``: dedup, batching, the cosine, the results;
  (b) floor: ``model.encode(distinct_texts, batch_size=64)`` on the same SentenceTransformer.

Ratio = (a) / (b), wall and CPU (``time.process_time``: torch's threads included).

Usage: HF_HUB_OFFLINE=1 .venv/bin/python bench/bench_encode_floor.py [--cases 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from bench_scorer import EVALUATOR, MODEL, build_suite, similarity_texts

from evalrunner.evaluators.registry import resolve
from evalrunner.models import ModelHub


def clocked(run: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    samples = build_suite(args.cases, 2).samples
    distinct = list(dict.fromkeys(similarity_texts(samples)))
    model = ModelHub(device="cpu").encoder(MODEL).model  # the raw SentenceTransformer

    def evalrunner_side() -> None:
        hub = ModelHub(device="cpu")
        hub.encoder(MODEL)  # loaded before the clock, as bench_scorer does
        evaluator: Any = resolve(EVALUATOR)(options={"model": MODEL}, models=hub)
        results = []
        took = clocked(lambda: results.extend(evaluator.evaluate_batch(samples)))
        assert {r[0].status for r in results} == {"scored"}
        figures["evalrunner"].append(took)

    def floor_side() -> None:
        figures["floor"].append(
            clocked(lambda: model.encode(distinct, batch_size=64, show_progress_bar=False))
        )

    figures: dict[str, list[tuple[float, float]]] = {"evalrunner": [], "floor": []}
    model.encode(distinct[:64], batch_size=64, show_progress_bar=False)  # warm-up
    load = os.getloadavg()
    sides = [evalrunner_side, floor_side]
    for rep in range(args.repeats + 1):  # the first round warms both paths up, unrecorded
        for side in sides if rep % 2 == 0 else sides[::-1]:
            side()
        if rep == 0:
            figures = {"evalrunner": [], "floor": []}
    medians = {
        name: (statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs))
        for name, runs in figures.items()
    }
    print(
        json.dumps(
            {
                "samples": len(samples),
                "texts_asked": 2 * len(samples),
                "distinct_texts": len(distinct),
                "load_average_before_after": [round(load[0], 2), round(os.getloadavg()[0], 2)],
                "evalrunner_wall_cpu_s": [
                    [round(w, 3), round(c, 3)] for w, c in figures["evalrunner"]
                ],
                "floor_wall_cpu_s": [[round(w, 3), round(c, 3)] for w, c in figures["floor"]],
                "ratio_wall": round(medians["evalrunner"][0] / medians["floor"][0], 3),
                "ratio_cpu": round(medians["evalrunner"][1] / medians["floor"][1], 3),
            }
        )
    )


if __name__ == "__main__":
    main()
