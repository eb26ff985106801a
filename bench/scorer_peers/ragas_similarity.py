"""Ragas side of bench/bench_scorer.py (run in the scorer peers venv, never the project's).

Reads the suite the main bench wrote (argv[1]: model folder, warm-up size, repetitions and
the (response, reference) pairs) and times Ragas's semantic similarity on it as a user runs
it, with the same model files as evalrunner, loaded from the local folder (no network):
- "abatch_score": ``ragas.metrics.collections.SemanticSimilarity(embeddings=
  ragas.embeddings.HuggingFaceEmbeddings(model=<folder>, device="cpu"))`` and
  ``await metric.abatch_score([{"reference": ..., "response": ...}, ...])``, the current API;
- "evaluate()": ``ragas.evaluate(EvaluationDataset.from_list(rows),
  metrics=[ragas.metrics.SemanticSimilarity()], embeddings=<the same HuggingFaceEmbeddings>)``,
  the older metric class that ``evaluate()`` runs (``single_turn_ascore`` per row in Ragas'
  async executor).
Prints one line ``RESULT {json}``: import and load times, per repetition the wall seconds,
this process's CPU seconds and the CPU seconds other processes took meanwhile, and the scores
of the last repetition; bench_scorer.py computes the medians.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import sys
import time
import warnings
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _timing
from _timing import clocks, machine_busy

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
warnings.filterwarnings("ignore", category=DeprecationWarning)


def measure(run, warm, full, repeats: int) -> dict:
    run(warm)
    walls, cpus, scores, others = [], [], [], []
    for _ in range(repeats):
        busy = machine_busy()
        w, c = clocks()
        scores = run(full)
        w2, c2 = clocks()
        walls.append(w2 - w)
        cpus.append(c2 - c)
        others.append(max(0.0, machine_busy() - busy - (c2 - c)))
    return {
        "texts": 2 * len(full),
        "seconds": walls,
        "cpu_seconds": cpus,
        "others": others,
        "scores": [float(x) for x in scores],
    }


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    pairs, warmup, repeats = spec["pairs"], spec["warmup"], spec["repeats"]

    started = time.perf_counter()
    import torch
    from ragas import EvaluationDataset, evaluate
    from ragas.embeddings import HuggingFaceEmbeddings
    from ragas.metrics import SemanticSimilarity as LegacySemanticSimilarity
    from ragas.metrics.collections import SemanticSimilarity

    import_s = time.perf_counter() - started

    started = time.perf_counter()
    embeddings = HuggingFaceEmbeddings(model=spec["model_path"], device="cpu")
    load_s = time.perf_counter() - started

    metric = SemanticSimilarity(embeddings=embeddings)

    def collections_api(rows: list[dict]) -> list[float]:
        inputs = [{"reference": r["reference"], "response": r["response"]} for r in rows]
        return [r.value for r in asyncio.run(metric.abatch_score(inputs))]

    def evaluate_api(rows: list[dict]) -> list[float]:
        dataset = EvaluationDataset.from_list(
            [{"reference": r["reference"], "response": r["response"]} for r in rows]
        )
        result = evaluate(
            dataset,
            metrics=[LegacySemanticSimilarity()],
            embeddings=embeddings,
            show_progress=False,
        )
        return [row["semantic_similarity"] for row in result.scores]

    runs = {}
    for name, run in (("abatch_score", collections_api), ("evaluate()", evaluate_api)):
        try:
            runs[name] = measure(run, pairs[:warmup], pairs, repeats)
        except Exception as exc:  # report, keep the other run
            runs[name] = {"not_run": f"{type(exc).__name__}: {exc}"[:1500]}

    print(
        "RESULT "
        + json.dumps(
            {
                "versions": {
                    p: version(p)
                    for p in ("ragas", "sentence-transformers", "transformers", "torch")
                },
                "python": platform.python_version(),
                "torch_threads": torch.get_num_threads(),
                "import_seconds": round(import_s, 2),
                "load_seconds": round(load_s, 2),
                "runs": runs,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
