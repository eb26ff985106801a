"""Ragas side of bench/bench_vs_ragas.py (run in a peers venv, never the project's).

Reads the cases the main bench wrote (argv[1]: a JSON list of {"question", "reference",
"response"}) and scores them as a Ragas user does with the same lexical metrics as the
evalrunner side: ``ragas.evaluate(EvaluationDataset.from_list(rows), metrics=[RougeScore(),
BleuScore()])`` (Ragas's non-LLM metrics: no LLM, no embeddings, no network). Prints one line
``RESULT {json}``: cases, wall seconds of ``evaluate()`` (imports apart), this process's CPU
seconds, cases/s, peak RSS and the mean scores.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
warnings.filterwarnings("ignore")


def main() -> None:
    rows = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    start_import = time.perf_counter()
    from ragas import EvaluationDataset, evaluate
    from ragas.metrics import BleuScore, RougeScore

    imported = time.perf_counter() - start_import
    dataset = EvaluationDataset.from_list(
        [
            {"user_input": r["question"], "reference": r["reference"], "response": r["response"]}
            for r in rows
        ]
    )
    wall, cpu = time.perf_counter(), time.process_time()
    # argv[2] (bench/peers.py): "rouge" scores ROUGE alone, as the 5-case workload does
    chosen = [RougeScore()] if sys.argv[2:] == ["rouge"] else [RougeScore(), BleuScore()]
    result = evaluate(dataset, metrics=chosen, show_progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    frame = result.to_pandas()
    out = {
        "tool": f"ragas {version('ragas')}",
        "cases": len(rows),
        "import_seconds": round(imported, 2),
        "seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "cases_per_s": round(len(rows) / wall, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "mean_scores": {c: round(float(frame[c].mean()), 4) for c in frame.columns if "score" in c},
    }
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
