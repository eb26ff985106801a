"""Fixtures of the model tests: tiny random models (built once per session) and the packaged
MiniLM. The 'models' extra is part of the test install (`make test`), so nothing here skips."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalrunner.models import ModelHub
from tests.models import tiny


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    """Paths of the tiny encoder, cross-encoder, NLI cross-encoder, detoxify checkpoint
    folder and GPT-2."""
    return tiny.build_all(tmp_path_factory.mktemp("tiny-models"))


@pytest.fixture(scope="session")
def minilm_hub() -> ModelHub:
    """One hub for the session, so the packaged MiniLM is loaded once (a few seconds)."""
    return ModelHub(device="cpu")


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path):
    """No hub, no network, and an empty models dir: only what a test provides is found."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    monkeypatch.setenv("EVALRUNNER_MODELS_DIR", str(tmp_path / "models"))
    for role in (
        "EMBEDDING",
        "CROSS_ENCODER",
        "BERTSCORE",
        "HALLUCINATION",
        "TOXICITY",
        "PERPLEXITY",
        "NLI",
    ):
        monkeypatch.delenv(f"EVALRUNNER_MODEL_{role}", raising=False)
    monkeypatch.delenv("EVALRUNNER_MODELS_FILE", raising=False)


@pytest.fixture
def count_calls(monkeypatch):
    """``count_calls(obj, "method")`` -> a list that gets the length of the first argument
    of every call (how many texts or pairs went to the model in each call)."""

    def spy_on(obj, method: str) -> list[int]:
        calls: list[int] = []
        real = getattr(obj, method)

        def spy(items, *args, **kwargs):
            calls.append(len(items))
            return real(items, *args, **kwargs)

        monkeypatch.setattr(obj, method, spy)
        return calls

    return spy_on
