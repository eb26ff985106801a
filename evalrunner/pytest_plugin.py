"""The pytest plugin (entry point ``pytest11: evalrunner``).

- ``evalrunner.assert_case(...)`` in any test (see :mod:`evalrunner.api.assertions`);
  ``--evalrunner-judge JSON|FILE`` (or the ``evalrunner_judge`` ini value) is the judge it
  uses when a test names none.
- A suite as test items: a file named ``*.evalrunner.json`` is collected as one test item per
  case of its suite. The file holds what ``evalrunner.evaluate`` takes::

      {"suite": "hr.csv", "target": {"url": "http://localhost:8080/ask"},
       "metrics": ["Rouge Metric"], "thresholds": {"ROUGE-L": 0.5}, "iterations": 1}

  ``suite`` is relative to the file, and so is a ``.py`` file in ``plugins`` (the modules of
  your own metrics, as ``--plugin``); ``target`` is the event's target object or
  ``"module:function"``, a Python function imported from the file's folder and run
  in-process. The suite runs once, when its first item runs; each item then passes when
  every iteration of its case was answered and passed its gated metrics (the primary ones and
  any named in ``thresholds`` / ``fail_under``), fails with each failing metric's score,
  threshold and reason, and is skipped when none of them could be scored. Reports go to
  ``--evalrunner-out`` (default ``<rootdir>/evalrunner-out``), where earlier runs are the
  baseline, as with the CLI. After the cases, one item named ``run verdict`` passes exactly
  when the run's verdict does (``"fail_on"`` and the other policy keys of ``evaluate`` may be
  given in the file), so a regression or too many errors fail the session too.

The module imports only pytest at load: the plugin is loaded in every pytest session of an
environment where evalrunner is installed, and must cost nothing there.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from evalrunner.api.result import EvalRun

#: The suffix of a file collected as a suite of test items.
SPEC_SUFFIX = ".evalrunner.json"
#: The name of the item, after the cases, that holds the run's verdict.
VERDICT_ITEM = "run verdict"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalrunner", "evalrunner: RAG / LLM evaluation")
    group.addoption(
        "--evalrunner-judge",
        default=None,
        help="LLM judge for evalrunner.assert_case and suite items, as JSON or a file "
        '({"openai": {...}} or {"bedrock": {...}}); without one judge metrics are skipped.',
    )
    group.addoption(
        "--evalrunner-out",
        default=None,
        help="Folder for the reports of *.evalrunner.json suites "
        "(default <rootdir>/evalrunner-out).",
    )
    parser.addini("evalrunner_judge", "Default for --evalrunner-judge.", default="")


def pytest_configure(config: pytest.Config) -> None:
    judge = config.getoption("evalrunner_judge") or config.getini("evalrunner_judge")
    if judge:
        from evalrunner.api.assertions import JUDGE_ENV

        config.stash[_saved_judge] = os.environ.get(JUDGE_ENV)
        os.environ[JUDGE_ENV] = str(judge)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _saved_judge in config.stash:
        from evalrunner.api.assertions import JUDGE_ENV

        saved = config.stash[_saved_judge]
        if saved is None:
            os.environ.pop(JUDGE_ENV, None)
        else:
            os.environ[JUDGE_ENV] = saved


_saved_judge = pytest.StashKey[str | None]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.name.endswith(SPEC_SUFFIX):
        return SuiteFile.from_parent(parent, path=file_path)
    return None


class CaseFailed(Exception):
    """A case's metrics or its target call failed; the message is the report."""


class SuiteFile(pytest.File):
    """A ``*.evalrunner.json`` file: one item per case of its suite."""

    def collect(self) -> Iterator[pytest.Item]:
        from evalrunner.suite.readers import read_suite_file

        self.spec = _read_spec(self.path)
        self.suite_path = (self.path.parent / str(self.spec["suite"])).resolve()
        self._run: EvalRun | None = None
        self._error: str | None = None
        for case in read_suite_file(self.suite_path).cases:
            yield CaseItem.from_parent(self, name=case.case_id, case_id=case.case_id)
        yield VerdictItem.from_parent(self, name=VERDICT_ITEM)

    def run(self) -> EvalRun:
        """The suite's run, made once (by the first item that asks)."""
        if self._error is not None:
            raise CaseFailed(self._error)
        if self._run is None:
            from evalrunner.api.runs import evaluate
            from evalrunner.errors import EvalRunnerError

            spec = dict(self.spec)
            spec.pop("suite")
            target = _target(spec.pop("target"), self.path.parent)
            if isinstance(spec.get("plugins"), list):  # a .py file: beside the spec file
                spec["plugins"] = [
                    str(self.path.parent / p) if isinstance(p, str) and p.endswith(".py") else p
                    for p in spec["plugins"]
                ]
            out = self.config.getoption("evalrunner_out") or self.config.rootpath / "evalrunner-out"
            try:
                self._run = evaluate(self.suite_path, target, out=out, **spec)
            except EvalRunnerError as exc:
                self._error = f"the suite run failed: {exc.message}"
                raise CaseFailed(self._error) from None
        return self._run


def run_failure(run: EvalRun) -> str | None:
    """Why the run's verdict fails the ``run verdict`` item (None: it passed)."""
    verdict = run.verdict
    if verdict.passed:
        return None
    return "\n".join([verdict.headline, *verdict.reasons, *verdict.notes])


class VerdictItem(pytest.Item):
    """The suite's run as a whole: passes exactly when the run's verdict is a pass (the
    verdict the CLI exits with), so a regression, too many errors or a stop fails the
    session even when no single case shows it."""

    def runtest(self) -> None:
        assert isinstance(self.parent, SuiteFile)
        failure = run_failure(self.parent.run())
        if failure is not None:
            raise CaseFailed(failure)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return f"the run's verdict: {excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, "evalrunner run verdict"


class CaseItem(pytest.Item):
    """One case of a suite: passes when every iteration passed its gated metrics."""

    def __init__(self, *, case_id: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case_id = case_id

    def runtest(self) -> None:
        assert isinstance(self.parent, SuiteFile)
        run = self.parent.run()
        data = run.report
        gated = {
            *(m.metric for m in data.metrics if m.primary),
            *(g.metric for g in data.gates),
            *self.parent.spec.get("thresholds", {}),
        }
        # a conversation's item is its own row (the conversation metrics) and its turns'
        rows = [
            r for r in data.rows if r.case_id == self.case_id or r.conversation_id == self.case_id
        ]
        failures: list[str] = []
        unscored: list[str] = []
        scored = 0
        for row in rows:
            where = [f"turn {row.turn}"] if row.turn is not None else []
            where += [f"iteration {row.iteration}"] if data.iterations > 1 else []
            at = f" ({', '.join(where)})" if where else ""
            if row.status != "ok":
                failures.append(f"{row.status}{at}: {row.error or 'no answer'}")
                continue
            for result in row.results:
                if result.metric not in gated:
                    continue
                if result.status == "skipped":
                    unscored.append(f"{result.metric}{at}: {result.reason}")
                    continue
                if result.status == "error":
                    failures.append(f"{result.metric}{at}: evaluator error: {result.reason}")
                    continue
                scored += 1
                if not result.success:
                    score = "no score" if result.score is None else f"{result.score:.4f}"
                    failures.append(
                        f"{result.metric}{at}: {score} (threshold {result.threshold}): "
                        f"{result.reason}"
                    )
        if not scored and not failures:
            # Nothing measured proves nothing: the case fails with why, as assert_case does.
            failures = ["none of its gated metrics could be scored", *unscored]
        if failures:
            raise CaseFailed("\n".join(failures))

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str:
        if isinstance(excinfo.value, CaseFailed):
            return f"case {self.case_id} failed:\n{excinfo.value}"
        return str(super().repr_failure(excinfo, style=style))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"evalrunner case {self.case_id}"


def _read_spec(path: Path) -> dict[str, Any]:
    from evalrunner.errors import ConfigError

    try:
        spec = json.loads(path.read_text("utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(spec, dict) or "suite" not in spec or "target" not in spec:
        raise ConfigError(
            f'{path}: expected an object with "suite" (a file next to it) and "target" (the '
            'event\'s target object or "module:function"), e.g. {"suite": "hr.csv", '
            '"target": {"url": "http://localhost:8080/ask"}}'
        )
    return spec


def _target(target: Any, folder: Path) -> Any:
    """``"module:function"`` imported from ``folder``; anything else as the event's target."""
    if not isinstance(target, str) or ":" not in target or target.lstrip().startswith("{"):
        return target
    from evalrunner.errors import ConfigError

    module_name, _, attribute = target.partition(":")
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"target {target!r}: cannot import {module_name!r} ({exc})") from None
    finally:
        sys.path.remove(str(folder))
    function = getattr(module, attribute, None)
    if not callable(function):
        raise ConfigError(f"target {target!r}: {module_name} has no function {attribute!r}")
    return function


__all__ = ["SPEC_SUFFIX", "VERDICT_ITEM", "CaseItem", "SuiteFile", "VerdictItem", "run_failure"]
