"""Issue 27 item 5: a Python function target that hangs, raises, returns None, a number or
100 MB, beside one that answers, through ``evalrunner.evaluate()`` with a 3 s deadline. Prints
the run's seconds and each case's error; run it under ``/usr/bin/time -v`` for the process's
wall time (it must exit though one call never returns) and peak RSS.

    /usr/bin/time -f "%e s %M KB" python bench/bench_hung_function.py
"""

from __future__ import annotations

import tempfile
import time

import evalrunner


def target(question: str) -> object:
    if question == "hang":
        while True:
            time.sleep(1)
    if question == "raise":
        raise ValueError("boom")
    if question == "none":
        return None
    if question == "int":
        return 42
    if question == "big":
        return "x" * 100_000_000
    return "25 days."


def main() -> None:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        run = evalrunner.evaluate(
            suite=[
                {"question": q, "expected_answer": "25 days."}
                for q in ("hang", "raise", "none", "int", "big", "ok")
            ],
            target=target,
            metrics=["Rouge Metric"],
            out=out,
            target_options={"timeout_seconds": 3},
        )
        print(f"run finished in {time.perf_counter() - started:.1f} s")
        for question, error in zip(run.details["question"], run.details["error"], strict=True):
            print(f"{question:6} {str(error)[:150]}")


if __name__ == "__main__":
    main()
