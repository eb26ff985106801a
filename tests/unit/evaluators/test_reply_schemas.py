"""A judge metric's reply schema lives next to the metric that asks for it: the pydantic model
passed to the judge (``ask`` / ``self.ask``, or ``counted`` for a fixed-length reply) is
defined in the asking module's own package. The one exception is the shared steps of
``evalrunner/judge/extract.py`` (statements, verdicts, statement checks), whose replies
several metrics share by design: one call, cached, answers all of them."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil

from pydantic import BaseModel

import evalrunner.evaluators as evaluators_package
from evalrunner.judge.base import Message

SHARED_STEPS = "evalrunner.judge.extract"


def _called_name(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _reply_schemas(module_name: str) -> dict[str, type[BaseModel]]:
    module = importlib.import_module(module_name)
    tree = ast.parse(inspect.getsource(module))
    found: dict[str, type[BaseModel]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called_name(node) in {"ask", "counted"}):
            continue
        for arg in node.args:
            value = getattr(module, arg.id, None) if isinstance(arg, ast.Name) else None
            if isinstance(value, type) and issubclass(value, BaseModel):
                found[arg.id] = value
    return found


def _asking_modules() -> dict[str, dict[str, type[BaseModel]]]:
    names = [
        m.name
        for m in pkgutil.walk_packages(
            evaluators_package.__path__, evaluators_package.__name__ + "."
        )
    ]
    return {n: schemas for n in names if (schemas := _reply_schemas(n))}


def test_each_reply_schema_is_defined_next_to_the_metric_that_asks_for_it() -> None:
    asking = _asking_modules()
    # the scan sees the judge metrics (a scan that found nothing would prove nothing)
    assert {"evalrunner.evaluators.judge_safety", "evalrunner.evaluators.agent_judged"} <= set(
        asking
    )
    misplaced = []
    for module_name, schemas in asking.items():
        home = module_name.rsplit(".", 1)[0] if module_name.count(".") > 2 else module_name
        for name, schema in schemas.items():
            if schema.__module__ == SHARED_STEPS:
                continue
            if not (schema.__module__ == module_name or schema.__module__.startswith(home + ".")):
                misplaced.append(f"{module_name} asks with {name} from {schema.__module__}")
    assert misplaced == []


def test_no_evaluator_takes_a_reply_schema_from_the_judge_package_but_the_shared_steps() -> None:
    """Schemas chosen at run time (GEval's 1-5 or 1-10 score, a conversation metric's turn
    replies) are not plain arguments the scan above sees; a model imported from
    ``evalrunner/judge/`` into an evaluator module, other than a shared step's, would be a
    reply schema kept away from its metric."""
    misplaced = []
    for info in pkgutil.walk_packages(
        evaluators_package.__path__, evaluators_package.__name__ + "."
    ):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, BaseModel)
                and value.__module__.startswith("evalrunner.judge.")
                and value.__module__ != SHARED_STEPS
                and value is not Message  # what is sent to the judge, not a reply
            ):
                misplaced.append(f"{info.name}: {name} from {value.__module__}")
    assert misplaced == []
