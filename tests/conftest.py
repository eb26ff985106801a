"""Fixtures every test suite may use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalrunner import redaction
from tests.support.judge_stub import JudgeStub


@pytest.fixture(autouse=True)
def _forget_registered_secrets() -> Iterator[None]:
    """The redaction set is process-wide by design; a test's secrets must not mask the next
    test's strings."""
    yield
    redaction.forget_all()


@pytest.fixture
def judge_stub() -> Iterator[JudgeStub]:
    """A started OpenAI-compatible stub judge server (see tests/support/judge_stub.py).
    Its default responder answers "{}"; set ``judge_stub.responder`` to script replies."""
    with JudgeStub() as stub:
        yield stub
