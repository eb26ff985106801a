"""A local run hands the engine's bucket and region to its handlers in their runtime's
settings: it leaves the environment of the process (a notebook's, a test run's) alone, and
the handlers it runs are the ones ``lambdas/`` registers, found without the core importing
``lambdas/``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import evalrunner
from evalrunner.launch import local_pipeline
from lambdas import local

pytestmark = pytest.mark.slow


def test_a_local_run_does_not_touch_the_process_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALRUNNER_BUCKET", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-3")  # the user's, not the engine's
    seen: list[tuple[str | None, str | None]] = []

    def policy_bot(question: str) -> str:
        seen.append((os.environ.get("EVALRUNNER_BUCKET"), os.environ.get("AWS_DEFAULT_REGION")))
        return f"About {question}: 25 days."

    run = evalrunner.evaluate(
        suite=[{"question": "annual leave", "expected_answer": "About annual leave: 25 days."}],
        target=policy_bot,
        metrics=["Exact match"],
        out=tmp_path,
    )
    assert seen == [(None, "eu-west-3")]
    assert [row["status"] for _, row in run.details.iterrows()] == ["ok"]
    assert "EVALRUNNER_BUCKET" not in os.environ
    assert os.environ["AWS_DEFAULT_REGION"] == "eu-west-3"


def test_the_local_pipeline_is_the_one_lambdas_registers() -> None:
    assert local_pipeline() is local.local_pipeline
