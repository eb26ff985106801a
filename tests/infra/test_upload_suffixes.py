"""The upload trigger's rule matches every suite format a run reads (a promoted ``.jsonl``
suite uploaded under test-suites/ starts a run like an ``.xlsx`` one)."""

from __future__ import annotations

from evalrunner.event_rules import SUITE_EXTENSIONS
from infra.parts.triggers import UPLOAD_SUFFIXES


def test_the_rule_matches_every_suite_extension() -> None:
    assert {f".{suffix}" for suffix in UPLOAD_SUFFIXES} == set(SUITE_EXTENSIONS)
