"""Which metrics a monitor run scores: referenceless ones only, since production has no
expected answer. A metric is referenceless when everything it reads is the question, the
answer, the retrieved contexts or the agent's steps."""

from __future__ import annotations

from evalrunner.errors import ConfigError
from evalrunner.evaluators.base import Evaluator, Input, Requirement
from evalrunner.evaluators.registry import available, is_builtin, resolve
from evalrunner.monitor.model import MonitorError

REFERENCELESS = frozenset({Input.QUESTION, Input.ANSWER, Input.CONTEXTS, Input.STEPS})
#: What is scored of an interaction: a metric reading only the question scores nothing the
#: system did (those read an expected intent or tool from the case).
_OUTPUTS = frozenset({Input.ANSWER, Input.CONTEXTS, Input.STEPS})
#: The judge metrics a monitor adds when a judge is configured (the RAG triad without a
#: reference: is the answer grounded, on topic, and was the right context retrieved).
JUDGE_DEFAULTS = ("Faithfulness", "Answer Relevancy", "Contextual Relevancy")


def referenceless(cls: type[Evaluator]) -> bool:
    inputs = cls.inputs
    return bool(inputs) and inputs <= REFERENCELESS and bool(inputs & _OUTPUTS)


def default_metrics(*, with_judge: bool) -> list[str]:
    """Every built-in referenceless metric that needs no model and no judge (and runs by
    default), plus :data:`JUDGE_DEFAULTS` when a judge is configured."""
    names = [
        name
        for name, cls in available().items()
        if is_builtin(cls)
        and cls.in_defaults
        and cls.requires is Requirement.NOTHING
        and referenceless(cls)
    ]
    if with_judge:
        names += [n for n in JUDGE_DEFAULTS if n in available()]
    return names


def check_metrics(names: list[str]) -> list[str]:
    """The named metrics, each resolved; one that needs a reference is refused, naming what
    it needs."""
    problems = []
    for name in names:
        try:
            cls = resolve(name)
        except ConfigError as exc:  # the registry's own message names the valid ones
            problems.append(str(exc))
            continue
        if not referenceless(cls):
            needs = ", ".join(sorted(i.value for i in cls.inputs - REFERENCELESS)) or "no output"
            problems.append(
                f"{cls.name!r} needs {needs}, which production interactions do not have; "
                "a monitor scores referenceless metrics (see `evalrunner metrics`)"
            )
    if problems:
        raise MonitorError("--metric: " + "; ".join(problems))
    return names
