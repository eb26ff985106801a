"""Fixtures for runs through the embedded engine."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

SUITE_CSV = """id,question,expected_answer,categories
c1,How many days of annual leave?,Employees get 25 days of annual leave.,leave
c2,What is the pension match?,The company matches pension contributions up to 6%.,benefits
c3,BROKEN please fail,This case's target always fails.,broken
c4,Is there a question without an expected answer?,,misc
"""


def echo_target(event, context):
    """A target Lambda: answers deterministically, and fails on purpose for one question."""
    question = event["question"]
    if "BROKEN" in question:
        raise RuntimeError("the target blew up on purpose")
    answers = {
        "How many days of annual leave?": "Employees get 25 days of annual leave.",
        "What is the pension match?": "Pension contributions are matched.",
    }
    return {"answer": answers.get(question, "I do not know."), "contexts": [f"doc for {question}"]}


@pytest.fixture
def suite_file(tmp_path: Path) -> Path:
    path = tmp_path / "mini.csv"
    path.write_text(SUITE_CSV, encoding="utf-8")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text("utf-8-sig"))))
