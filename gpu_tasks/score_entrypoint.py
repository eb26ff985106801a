"""Score one run on a GPU: the AWS Batch job the state machine's ScoreOnBatch state submits.

It runs the very function the Score Lambda runs for small runs,
:func:`evalrunner.pipeline.score.score_run`, so the two paths cannot drift apart. The run is
named by the container environment the state machine sets (``EVALRUNNER_RUN_ID``,
``EVALRUNNER_BUCKET``) or by options::

    python -m gpu_tasks.score_entrypoint --run-id 261122-093005-a1b2c3 --bucket my-runner-bucket

Exit codes: 0 scored (``runs/<run_id>/scores.json`` written), 1 the run cannot be scored (the
message says why; the state machine's Catch records it and Aggregate still writes the
reports), 2 bad options.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import Any

from evalrunner.errors import EvalRunnerError
from evalrunner.pipeline.context import RunContext
from evalrunner.pipeline.score import score_run
from evalrunner.storage import RunStore

ENV_RUN_ID = "EVALRUNNER_RUN_ID"
ENV_BUCKET = "EVALRUNNER_BUCKET"


def device() -> str:
    """What the model code will run on, for the job's log (torch is optional)."""
    try:
        import torch
    except ImportError:
        return "cpu (torch not installed)"
    if torch.cuda.is_available():
        return f"cuda ({torch.cuda.get_device_name(0)}, {torch.cuda.device_count()} device(s))"
    return "cpu (no CUDA device visible)"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m gpu_tasks.score_entrypoint",
        description="Score the model metrics of one evalrunner run (the GPU Batch task).",
    )
    parser.add_argument(
        "--run-id", default=os.environ.get(ENV_RUN_ID), help=f"default: ${ENV_RUN_ID}"
    )
    parser.add_argument(
        "--bucket", default=os.environ.get(ENV_BUCKET), help=f"default: ${ENV_BUCKET}"
    )
    args = parser.parse_args(argv)
    missing = [
        f"--{name.replace('_', '-')} (or ${env})"
        for name, env in (("run_id", ENV_RUN_ID), ("bucket", ENV_BUCKET))
        if not getattr(args, name)
    ]
    if missing:
        parser.error(f"missing {' and '.join(missing)}")
    return args


def log(**fields: Any) -> None:
    """One JSON line per event: CloudWatch Logs Insights can query the job's log."""
    print(json.dumps({"service": "evalrunner-gpu-score", **fields}), flush=True)


def main(argv: Sequence[str] | None = None, *, store: RunStore | None = None) -> int:
    args = parse_args(argv)
    store = store or RunStore(args.bucket)
    log(message="scoring run", run_id=args.run_id, bucket=args.bucket, device=device())
    started = time.perf_counter()
    try:
        # The task's one run: its hub is configured by the job definition's environment.
        result = score_run(RunContext.load(store, args.run_id))
    except EvalRunnerError as exc:
        log(message="the run cannot be scored", run_id=args.run_id, error=str(exc))
        print(f"evalrunner score: {exc}", file=sys.stderr)
        return 1
    log(
        message="run scored",
        run_id=args.run_id,
        seconds=round(time.perf_counter() - started, 3),
        scores_key=store.scores_key(args.run_id),
        **result.wire(),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
