"""Every evaluator module's docstring examples run and print what they say (doctest): the
example a newcomer copies from an evaluator's docstring is the evaluator's real behaviour.

The examples need no model and no judge, so they run in the ordinary unit suite; an
evaluator that has none yet is named in ``WITHOUT_EXAMPLE``, and the list may only shrink.
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

#: Evaluators whose docstring has no runnable example yet: judge and model metrics, whose
#: examples need a pure part (how a reply becomes a score) split out of the judge or model
#: call first. Remove a name when it gets one.
WITHOUT_EXAMPLE: frozenset[str] = frozenset(
    {
        "Answer relevancy (sentence similarity)",
        "Answer semantic sentence similarity",
        "Answer semantic similarity",
        "BERT Score",
        "Context mean reciprocal rank",
        "Context relevancy (soft recall and precision)",
        "Groundedness",
        "Hallucination",
        "Perplexity",
        "Summarization completeness and faithfulness",
        "Toxicity",
    }
)


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_print_what_they_say(module_name: str) -> None:
    module = importlib.import_module(module_name)
    flags = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
    result = doctest.testmod(module, optionflags=flags, verbose=False, report=True)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def _has_example(cls: type) -> bool:
    """An example counts only where doctest runs it: in the docstring of a class that its
    module holds by name (a generated class kept in a list would never be tested)."""
    held = getattr(importlib.import_module(cls.__module__), cls.__name__, None) is cls
    return held and ">>>" in (cls.__dict__.get("__doc__") or "")


def test_each_evaluator_carries_an_example_unless_listed() -> None:
    names = {name for name, cls in registry.available().items() if not _has_example(cls)}
    assert names == WITHOUT_EXAMPLE, (
        f"without an example but not listed: {sorted(names - WITHOUT_EXAMPLE)}; "
        f"listed but now with one (drop them from WITHOUT_EXAMPLE): "
        f"{sorted(WITHOUT_EXAMPLE - names)}"
    )
