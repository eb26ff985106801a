"""PII masking (evalrunner/privacy.py) against hostile input: how long each kind's finder
takes over a long text built to be slow for it, and how much memory the names model holds
for a long text. Production text is untrusted: a user can paste 100 KB into a question, and
the deployed monitor masks it in a Lambda with a time and memory limit, invocation after
invocation until the run starts.

    .venv/bin/python bench/bench_pii_adversarial.py --chars 100000          # each finder
    .venv/bin/python bench/bench_pii_adversarial.py --names --chars 400000  # NER peak RSS
    .venv/bin/python bench/bench_pii_adversarial.py --suite-row --chars 1000000

``--names`` runs in a process of its own per call (peak RSS is per process); it builds
spaCy's default NER as ``bench_pii_mask.py --names`` does.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

#: Texts built to be slow for a finder: many candidates, no match.
SHAPES = {
    "zip codes (12345 ...)": "12345 ",
    "words and zip codes (ab 12345 ...)": "ab 12345 ",
    "street, state (1 Main St NY ...)": "1 Main St NY ",
    "spaced SSN groups (123 45 ...)": "123 45 ",
    "spaced digits (1 2 3 ...)": "1 ",
    "dotted digits (1.1.1 ...)": "1.",
    "phones (+1 (212) 555-0100 ...)": "+1 (212) 555-0100 ",
    "URL-encoded at signs (a%40 ...)": "a%40",
    "spelled-out at signs (a(at) ...)": "a(at)",
    "spelled-out dots (b (dot) ...)": "b (dot) ",
}


def finders(chars: int) -> None:
    from evalrunner.privacy import PiiKind, PiiMasker, PiiOptions

    kinds = [k for k in PiiKind if k is not PiiKind.PERSON]
    print(f"{'text':38s} " + " ".join(f"{k.value:>8s}" for k in kinds) + "   (seconds)")
    for name, unit in SHAPES.items():
        text = (unit * (chars // len(unit) + 1))[:chars]
        times = []
        for kind in kinds:
            masker = PiiMasker(PiiOptions(kinds=(kind,)))
            start = time.perf_counter()
            masker.mask(text)
            times.append(time.perf_counter() - start)
        print(f"{name:38s} " + " ".join(f"{t:8.3f}" for t in times), flush=True)


def names(chars: int) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_pii_mask import build_ner

    from evalrunner.privacy_names import load_entity_finder

    model = build_ner(Path(tempfile.mkdtemp()) / "ner")
    finder = load_entity_finder(model, {"PERSON": "PERSON"})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    sentence = "Ask Jane Doe about leave and send the form to the office today please. "
    text = (sentence * (chars // len(sentence) + 1))[:chars]
    start = time.perf_counter()
    found = sum(1 for _ in finder.find(text))
    took = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{chars:,} characters: {took:.1f} s, {found} names; RSS {before:.0f} MiB loaded, "
        f"peak {peak:.0f} MiB"
    )


def suite_row(chars: int) -> None:
    """What the monitor spends on one interaction whose question is ``chars`` characters of
    the slowest shape above (``suite_rows``, default masking)."""
    from datetime import UTC, datetime

    from evalrunner.monitor.model import Interaction
    from evalrunner.monitor.runner import suite_rows

    question = ("12345 " * (chars // 6 + 1))[:chars]
    item = Interaction(
        id="r",
        id_kind="record",
        question=question,
        answer="ok",
        timestamp=datetime.now(UTC),
        origin="bench",
        source="jsonl",
    )
    start = time.perf_counter()
    suite_rows([item], mask_pii=True)
    print(f"one {chars:,}-character question: suite_rows {time.perf_counter() - start:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chars", type=int, default=100_000)
    parser.add_argument("--names", action="store_true", help="the NER model's time and memory")
    parser.add_argument("--suite-row", action="store_true", help="one hostile interaction")
    args = parser.parse_args()
    (names if args.names else suite_row if args.suite_row else finders)(args.chars)


if __name__ == "__main__":
    main()
