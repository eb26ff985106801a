"""The floor of the lexical workload (bench/peers.py): the same ROUGE and BLEU figures as a
plain loop over rouge-score and nltk, no framework, no target, no report. Reads the rows file
bench/peers.py writes (argv[1]: a JSON list of {"question", "reference", "response"}); the
whole process, imports included, is what peers.py measures. Prints ``RESULT {json}``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
from rouge_score import rouge_scorer


def main() -> None:
    rows = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    smooth = SmoothingFunction().method1
    rouge = bleu = 0.0
    for row in rows:
        rouge += scorer.score(row["reference"], row["response"])["rougeL"].fmeasure
        bleu += sentence_bleu(
            [row["reference"].split()], row["response"].split(), smoothing_function=smooth
        )
    n = max(len(rows), 1)
    print("RESULT " + json.dumps({"cases": len(rows), "rouge": rouge / n, "bleu": bleu / n}))


if __name__ == "__main__":
    main()
