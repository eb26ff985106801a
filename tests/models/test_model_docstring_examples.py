"""The model metrics' docstring examples (the packaged MiniLM, or a tiny model the example
builds) run and print what they say; the other evaluators' run in the unit suite
(tests/unit/evaluators/test_docstring_examples.py)."""

from __future__ import annotations

import pytest

from tests.unit.evaluators.test_docstring_examples import MODEL_MODULES, run_examples


@pytest.mark.parametrize("module_name", MODEL_MODULES)
def test_model_docstring_examples_print_what_they_say(module_name: str) -> None:
    run_examples(module_name)
