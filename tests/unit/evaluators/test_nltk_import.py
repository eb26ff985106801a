"""nltk imported without scipy and scikit-learn (issue 31 goal 1;
evalrunner/evaluators/nltk_import.py says why and what it costs). The module checks run in a
fresh interpreter, since what is asserted is what an import leaves in ``sys.modules``."""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from evalrunner.evaluators import nltk_import


def run_fresh(body: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", body], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_rouge_and_bleu_compute_without_importing_scipy_or_scikit_learn() -> None:
    run_fresh(
        """
import sys
from evalrunner.evaluators.base import Sample
from evalrunner.evaluators.registry import resolve
sample = Sample(question="q", answer="the cats are running", expected_answer="cats run")
for name in ("Rouge Metric", "BLEU"):
    resolve(name)().score(sample)
assert "nltk.stem.porter" in sys.modules and "nltk.translate.bleu_score" in sys.modules
heavy = [m for m in sys.modules if m.split(".")[0] in ("scipy", "sklearn", "pandas")]
assert heavy == [], heavy
assert not any(type(f).__module__ == "evalrunner.evaluators.nltk_import" for f in sys.meta_path)
import scipy.stats, sklearn  # still importable afterwards, as installed
"""
    )


def test_what_was_imported_before_nltk_is_left_as_it_is() -> None:
    """A process that imported scipy.stats first keeps nltk's use of it."""
    run_fresh(
        """
import scipy.stats
from evalrunner.evaluators.nltk_import import import_nltk
import_nltk()
from nltk.metrics import association
assert association.fisher_exact is scipy.stats.fisher_exact
"""
    )


def test_scipy_and_scikit_learn_are_refused_to_the_importing_thread_only() -> None:
    """Another thread importing scipy while nltk's top level runs is not affected."""
    refused = nltk_import._NotOffered(threading.get_ident())
    with pytest.raises(ModuleNotFoundError):
        refused.find_spec("scipy.stats", None)
    with pytest.raises(ModuleNotFoundError):
        refused.find_spec("sklearn", None)
    assert refused.find_spec("numpy", None) is None
    answers: list[object] = []
    other = threading.Thread(target=lambda: answers.append(refused.find_spec("scipy", None)))
    other.start()
    other.join()
    assert answers == [None]
