"""PII masking speed (evalrunner/privacy.py) on interactions shaped like production RAG
traffic: a question, an answer and three retrieved contexts, with and without PII. What
``evalrunner estimate``'s monitor sizing assumes per KB of text (MASK_MS_PER_KB in
evalrunner/estimate/monitor.py) comes from here.

    .venv/bin/python bench/bench_pii_mask.py --interactions 300
"""

from __future__ import annotations

import argparse
import random
import time

from evalrunner.privacy import mask_case

WORDS = (
    "the leave policy gives employees twenty days of paid annual leave per calendar year "
    "requests go through the HR portal and need the manager approval two weeks ahead "
    "unused days carry over until March 31 after which they expire"
).split()
PII = [
    "jo.doe@example.com",
    "+1 415-555-0132",
    "020 7946 0958",
    "4111 1111 1111 1111",
    "DE89 3704 0044 0532 0130 00",
    "192.168.1.20",
    "ext. 4471, room 12, floor 3",  # digits, no PII
]


def text(rng: random.Random, chars: int, pii: bool) -> str:
    words: list[str] = []
    length = 0
    while length < chars:
        words.append(rng.choice(WORDS))
        if pii and rng.random() < 0.02:
            words.append(rng.choice(PII))
        length += len(words[-1]) + 1
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--interactions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for pii in (False, True):
        cases = [
            (text(rng, 150, pii), text(rng, 1500, pii), [text(rng, 1000, pii) for _ in range(3)])
            for _ in range(args.interactions)
        ]
        kb = sum(len(q) + len(a) + sum(map(len, c)) for q, a, c in cases) / 1024
        mask_case("warm up a@b.com +1 415-555-0132")
        started = time.perf_counter()
        for q, a, c in cases:
            mask_case(q, a, c)
        seconds = time.perf_counter() - started
        print(
            f"pii={pii}: {args.interactions} interactions, {kb / args.interactions:.2f} KB each: "
            f"{seconds * 1000 / args.interactions:.2f} ms per interaction, "
            f"{seconds * 1000 / kb:.2f} ms per KB"
        )


if __name__ == "__main__":
    main()
