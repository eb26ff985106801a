"""Fixtures for the target tests: fake AWS credentials and a scripted loopback HTTP server
(:class:`tests.support.loopback_http.Loopback`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from evalrunner.suite.model import TestCase, Turn
from tests.support.loopback_http import Loopback


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a default region; nothing from the developer's AWS setup leaks in."""
    for name in list(os.environ):
        if name.startswith(("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_CONFIG_FILE")):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture
def make_case() -> Callable[..., TestCase]:
    def make(question: str = "How many leave days do I get?", **kwargs: Any) -> TestCase:
        conversation = [Turn(role=r, content=c) for r, c in kwargs.pop("turns", [])]
        return TestCase(
            index=0, case_id="case-0001", question=question, conversation=conversation, **kwargs
        )

    return make


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    with Loopback() as server:
        yield server
