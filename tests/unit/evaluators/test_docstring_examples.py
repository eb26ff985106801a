"""Every evaluator module's docstring examples run and print what they say (doctest): the
example a newcomer copies from an evaluator's docstring is the evaluator's real behaviour.

Judge metrics' examples use :class:`~evalrunner.judge.scripted.ScriptedJudge` (replies written
out, validated with the metric's own schema) and run here; model metrics' use the packaged
MiniLM or a tiny model the example builds, offline, and run with the model tests
(:data:`MODEL_MODULES`).
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import evalrunner.evaluators as evaluators_package
from evalrunner.evaluators import registry

MODULES = sorted(
    [
        m.name
        for m in pkgutil.walk_packages(
            evaluators_package.__path__, evaluators_package.__name__ + "."
        )
    ]
    # the judge stand-in the judge metrics' examples use
    + ["evalrunner.judge.scripted"]
)


#: Modules whose examples load a model (torch, the packaged MiniLM, a tiny model they build):
#: their doctests run with the model tests (tests/models/test_model_docstring_examples.py),
#: so that this unit run stays a few seconds.
MODEL_MODULES: tuple[str, ...] = tuple(
    f"evalrunner.evaluators.{name}"
    for name in ("bertscore", "hallucination", "perplexity", "semantic", "summarization")
)


def run_examples(module_name: str) -> None:
    module = importlib.import_module(module_name)
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    result = doctest.testmod(module, optionflags=flags, verbose=False, report=True)
    assert result.attempted > 0 or module_name not in MODEL_MODULES
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


@pytest.mark.parametrize("module_name", [m for m in MODULES if m not in MODEL_MODULES])
def test_docstring_examples_print_what_they_say(module_name: str) -> None:
    run_examples(module_name)


def test_the_model_modules_are_modules_of_the_package() -> None:
    assert set(MODEL_MODULES) <= set(MODULES)


def _has_example(cls: type) -> bool:
    """An example counts only where doctest runs it: in the docstring of a class that its
    module holds by name (a generated class kept in a list would never be tested)."""
    held = getattr(importlib.import_module(cls.__module__), cls.__name__, None) is cls
    return held and ">>>" in (cls.__dict__.get("__doc__") or "")


def test_each_evaluator_carries_an_example() -> None:
    available = registry.available()
    assert len(available) >= 64  # the scan sees the registry (an empty one would prove nothing)
    without = sorted(name for name, cls in available.items() if not _has_example(cls))
    assert without == [], f"evaluators without a doctested example in their docstring: {without}"
