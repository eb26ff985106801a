"""Did the system retrieve the expected data (a record, a balance, a JSON value)?

``Retrieved data match`` compares the data the system retrieved (``data``: a tool's or a
query's result, the HR sheet's ``retrieved_data_by_system``) with the case's
``expected_data`` (``retrieved_data_ground_truth``). When both sides parse as JSON they are
compared as JSON values (key order and spacing do not matter; ``12`` equals ``12.0``);
otherwise as text, trimmed, inner whitespace folded and case-folded. A case without
expected data is skipped; a system that logged no data scores 0.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.registry import register

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 95

_SHOWN = 80


def _json(text: str) -> tuple[bool, Any]:
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def _text(text: str) -> str:
    return " ".join(text.split()).casefold()


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def data_equal(expected: str, actual: str) -> bool:
    """Equal as JSON values when both are JSON, else as normalised text."""
    expected_is_json, expected_value = _json(expected)
    actual_is_json, actual_value = _json(actual)
    if expected_is_json and actual_is_json:
        return bool(expected_value == actual_value)
    return _text(expected) == _text(actual)


@register
class RetrievedDataMatch(Evaluator):
    """Whether a tool or query fetched the data the case expects, compared as JSON values when
    both sides are JSON (key order and spacing do not matter), else as normalised text.

    >>> sample = Sample(question="Order total?", data='{"total": 42, "currency": "EUR"}',
    ...                 expected_data='{"currency": "EUR", "total": 42}')
    >>> for r in RetrievedDataMatch().evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} - {r.reason}")
    Retrieved data match: 1.00 - retrieved '{"total": 42, "currency": "EUR"}' as expected
    """

    name = "Retrieved data match"
    aliases = ("Retrieved data exact match", "retrieved_data_score")
    description = (
        "1 when the data the system retrieved equals the case's expected data (as JSON "
        "when both are JSON, else as text, case and spacing ignored)."
    )
    # The expected data is not an ``Input``: its absence is checked in ``score``.
    inputs = frozenset({Input.QUESTION})
    metrics = (
        MetricSpec(
            "Retrieved data match",
            "1 when the retrieved data equals the expected data",
            threshold=0.5,
            primary=True,
            kind="pass_fail",
        ),
    )

    @classmethod
    def applies_to(cls, sample: Sample) -> bool:
        return sample.expected_data is not None and bool(sample.expected_data.strip())

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        expected = sample.expected_data
        if expected is None or not expected.strip():
            raise SkipCase("the case has no expected data (fill the expected_data column)")
        metric = self.metrics[0].name
        actual = sample.data
        if actual is None or not actual.strip():
            return {metric: Scored(0.0, f"no data retrieved, expected {_short(expected)!r}")}
        if data_equal(expected, actual):
            return {metric: Scored(1.0, f"retrieved {_short(actual)!r} as expected")}
        return {metric: Scored(0.0, f"retrieved {_short(actual)!r}, expected {_short(expected)!r}")}
