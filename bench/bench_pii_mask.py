"""PII masking speed (evalrunner/privacy.py) on interactions shaped like production RAG
traffic: a question, an answer and three retrieved contexts, with and without PII. What
``evalrunner estimate``'s monitor sizing assumes per KB of text (MASK_MS_PER_KB in
evalrunner/estimate/monitor.py) comes from here.

``--names`` adds the cost of personal names (PERSON): no model can be downloaded here, so
the bench builds spaCy's default NER (a blank English pipeline with ``ner``: the tok2vec
CNN and transition parser of spaCy's small trained pipelines, without their tagger and
parser, which masking leaves out anyway), trains it a few steps on a few sentences (the
cost of a call does not depend on the weights), saves it and configures its folder, as a
user configures theirs; ``--ner-model PATH`` measures a real pipeline instead.

``--before FILE`` masks the same cases with another version of ``privacy.py`` too (its
``mask_case``, defaults), alternately, twice each, so both see the same load:

    git show main:evalrunner/privacy.py > /tmp/privacy_before.py
    .venv/bin/python bench/bench_pii_mask.py --interactions 300 --before /tmp/privacy_before.py
    .venv/bin/python bench/bench_pii_mask.py --interactions 300 [--names | --ner-model PATH]
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import sys
import tempfile
import time
from pathlib import Path

from evalrunner.privacy import DEFAULT_KINDS, PiiKind, PiiMasker, PiiOptions, mask_case

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
    "350 Fifth Avenue, New York, NY 10118",
    "jo [at] example [dot] com",
    "Jane Doe",
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


def build_ner(folder: Path) -> str:
    """spaCy's default NER, trained a few steps, saved to ``folder`` (see the docstring)."""
    import spacy
    from spacy.training import Example

    spacy.util.fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("ner").add_label("PERSON")  # type: ignore[attr-defined]
    examples = [
        Example.from_dict(nlp.make_doc(text), {"entities": [(at, at + 8, "PERSON")]})
        for text, at in [("Ask Jane Doe about leave.", 4), ("Send it to John Roe today.", 11)]
    ]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(10):
        nlp.update(examples, sgd=optimizer)
    nlp.to_disk(folder)
    return str(folder)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--interactions", type=int, default=300)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--names", action="store_true", help="also mask names (a built NER)")
    parser.add_argument("--ner-model", help="also mask names with this spaCy pipeline")
    parser.add_argument("--before", type=Path, help="another privacy.py to compare with")
    args = parser.parse_args()
    if args.before:
        compare(args.before, args.interactions, args.seed)
        return
    masker = PiiMasker()
    folder = tempfile.TemporaryDirectory(prefix="bench-ner-")  # removed at exit
    if args.names or args.ner_model:
        model = args.ner_model or build_ner(Path(folder.name) / "ner")
        started = time.perf_counter()
        masker = PiiMasker(PiiOptions(kinds=(*DEFAULT_KINDS, PiiKind.PERSON), ner_model=model))
        print(f"NER model {model} loaded in {time.perf_counter() - started:.2f} s")
    rng = random.Random(args.seed)
    for pii in (False, True):
        cases = [
            (text(rng, 150, pii), text(rng, 1500, pii), [text(rng, 1000, pii) for _ in range(3)])
            for _ in range(args.interactions)
        ]
        kb = sum(len(q) + len(a) + sum(map(len, c)) for q, a, c in cases) / 1024
        mask_case("warm up a@b.com +1 415-555-0132", masker=masker)
        started = time.perf_counter()
        for q, a, c in cases:
            mask_case(q, a, c, masker=masker)
        seconds = time.perf_counter() - started
        print(
            f"pii={pii}: {args.interactions} interactions, {kb / args.interactions:.2f} KB each: "
            f"{seconds * 1000 / args.interactions:.2f} ms per interaction, "
            f"{seconds * 1000 / kb:.2f} ms per KB"
        )


def compare(before: Path, interactions: int, seed: int) -> None:
    spec = importlib.util.spec_from_file_location("privacy_before", before)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = old  # its dataclasses look their module up
    spec.loader.exec_module(old)
    for pii in (False, True):
        rng = random.Random(seed)
        cases = [
            (text(rng, 150, pii), text(rng, 1500, pii), [text(rng, 1000, pii) for _ in range(3)])
            for _ in range(interactions)
        ]
        for label, masked in [("before", old.mask_case), ("after", mask_case)] * 2:
            masked("warm up a@b.com")
            started = time.perf_counter()
            for q, a, c in cases:
                masked(q, a, c)
            ms = (time.perf_counter() - started) * 1000 / interactions
            print(f"pii={pii} {label}: {ms:.2f} ms per interaction")


if __name__ == "__main__":
    main()
