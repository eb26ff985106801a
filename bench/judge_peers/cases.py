"""Build the fixed RAG cases of the judge-call benchmark from the demo suite (run once, in the
project venv; the result is committed as ``rag_cases.json`` so that every tool reads the
same cases).

Each case: a demo policy question and its expected answer; retrieved contexts = the case's
expected contexts plus two paragraph chunks of *other* policy documents (one before, one
after, so precision has something to rank); the answer = the expected answer with a small
change (the first number raised by one, or an added sentence when there is no number).
Usage: python bench/judge_peers/cases.py [--distractors 2] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from evalrunner.demo.assistant import load_policies  # noqa: E402
from evalrunner.demo.cases import DEMO_CASES  # noqa: E402

CASE_IDS = [
    "leave-01",
    "leave-02",
    "sick-01",
    "parental-02",
    "remote-02",
    "expenses-01",
    "travel-01",
    "benefits-01",
]


def paragraphs(markdown: str) -> list[str]:
    out = []
    for block in re.split(r"\n\s*\n", markdown):
        block = " ".join(line.strip() for line in block.strip().splitlines())
        if block and not block.startswith("#"):
            out.append(block)
    return out


def small_change(answer: str) -> str:
    match = re.search(r"\d+", answer)
    if match is None:
        return answer + " Your line manager can make exceptions."
    bumped = str(int(match.group()) + 1)
    return answer[: match.start()] + bumped + answer[match.end() :]


def build(distractors: int = 2) -> list[dict]:
    policies = load_policies()
    by_id = {c["id"]: c for c in DEMO_CASES}
    cases = []
    for case_id in CASE_IDS:
        case = by_id[case_id]
        rng = random.Random(case_id)
        others = [
            p
            for doc, text in policies.items()
            if doc not in case["expected_documents"]
            for p in paragraphs(text)
        ]
        picked = rng.sample(others, distractors)
        half = (distractors + 1) // 2
        cases.append(
            {
                "id": case_id,
                "question": case["question"],
                "expected_answer": case["expected_answer"],
                "expected_contexts": list(case["expected_contexts"]),
                "contexts": [*picked[:half], *case["expected_contexts"], *picked[half:]],
                "answer": small_change(case["expected_answer"]),
            }
        )
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--distractors",
        type=int,
        default=2,
        help="chunks of other policies added to each case's contexts",
    )
    parser.add_argument("--out", type=Path, default=HERE / "rag_cases.json")
    args = parser.parse_args()
    cases = build(args.distractors)
    doc = {
        "about": "Fixed RAG cases for bench/bench_judge_calls.py, built by "
        f"bench/judge_peers/cases.py (--distractors {args.distractors}) from evalrunner/demo "
        "(DEMO_CASES + policies).",
        "cases": cases,
    }
    args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
