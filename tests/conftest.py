"""Fixtures every test suite may use."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.judge_stub import JudgeStub


@pytest.fixture
def judge_stub() -> Iterator[JudgeStub]:
    """A started OpenAI-compatible stub judge server (see tests/support/judge_stub.py).
    Its default responder answers "{}"; set ``judge_stub.responder`` to script replies."""
    with JudgeStub() as stub:
        yield stub
