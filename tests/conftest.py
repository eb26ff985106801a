"""Fixtures every test suite may use."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from evalrunner import redaction
from tests.support.judge_stub import JudgeStub


@pytest.fixture(autouse=True)
def _forget_registered_secrets() -> Iterator[None]:
    """The redaction set is process-wide by design; a test's secrets must not mask the next
    test's strings."""
    yield
    redaction.forget_all()


@pytest.fixture(autouse=True)
def _no_operator_defaults(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Runs see the operator's default judge and metrics (evalrunner.run_defaults); tests
    start from none, whatever the machine running them has configured."""
    empty = tmp_path_factory.getbasetemp() / "evalrunner-config.json"
    empty.write_text("{}", encoding="utf-8")
    monkeypatch.setenv("EVALRUNNER_CONFIG", str(empty))
    monkeypatch.delenv("EVALRUNNER_JUDGE", raising=False)
    monkeypatch.delenv("EVALRUNNER_DEFAULT_METRICS", raising=False)
    monkeypatch.delenv("EVALRUNNER_PROFILE", raising=False)


@pytest.fixture
def thawed_collector() -> Iterator[None]:
    """The collector as a test of gc freezing leaves it: nothing frozen, enabled, defaults."""
    thresholds = gc.get_threshold()
    gc.unfreeze()
    yield
    gc.unfreeze()
    gc.enable()
    gc.set_threshold(*thresholds)


@pytest.fixture
def judge_stub() -> Iterator[JudgeStub]:
    """A started OpenAI-compatible stub judge server (see tests/support/judge_stub.py).
    Its default responder answers "{}"; set ``judge_stub.responder`` to script replies."""
    with JudgeStub() as stub:
        yield stub


@pytest.fixture
def moto_invokes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every invocation that reaches moto's Lambda responses (the HTTP layer boto3 talks to
    inside the mock), by the function name in its path: what an in-process call must avoid."""
    from moto.awslambda.responses import LambdaResponse

    seen: list[str] = []
    original = LambdaResponse.invoke

    def counted(self: LambdaResponse) -> Any:
        seen.append(self.path)
        return original(self)

    monkeypatch.setattr(LambdaResponse, "invoke", counted)
    return seen


@pytest.fixture(autouse=True)
def _own_workflow_scratch(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """A deployed workflow's tasks copy its prefix into a folder named by its id under the
    machine's temporary folder (a Lambda's own); tests on one machine (xdist workers, other
    checkouts) use the same ids, so each test gets its own root."""
    monkeypatch.setenv("EVALRUNNER_WORKFLOW_SCRATCH", str(tmp_path_factory.mktemp("workflow")))
