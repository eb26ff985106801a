"""Metrics in the user's own code: a decorated function, or an ``Evaluator`` subclass.

A user writes the metric next to their application (``@evalrunner.metric`` on a function of
the case's :class:`~evalrunner.evaluators.base.Sample`, or a subclass of ``Evaluator``) and
names the module: ``evalrunner run --plugin my_metrics`` (an importable module, or a path to a
``.py`` file), the event's ``plugins`` list, or an installed package's entry point in the
``evalrunner.evaluators`` group. Importing the module registers its metrics in the catalog
(:mod:`evalrunner.evaluators.registry`), where they are found by name like a built-in one.

Why by module and not by object: every step of a run (Prepare, each RunCase task, Score,
Aggregate) builds its evaluators from the run's configuration, a JSON document that crosses
process boundaries in the cloud. The configuration carries the metric names and the plugin
modules; each step imports the modules itself (:meth:`RunContext.__init__
<evalrunner.pipeline.context.RunContext>`), so a function is never pickled and the deployed
path imports the very same module.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, TypeAlias

from evalrunner.errors import ConfigError, PluginError
from evalrunner.evaluators import judge_metrics, registry
from evalrunner.evaluators.base import Evaluator, Input, MetricSpec, NoOptions, Sample, Scored

#: The entry point group through which an installed package offers its evaluators.
ENTRY_POINT_GROUP = "evalrunner.evaluators"
#: Set on a module imported from a file path: the path, which is what a run carries.
PATH_ATTRIBUTE = "__evalrunner_plugin_path__"
#: The plugin modules a deployed function may import, comma-separated (what its code holds).
ENV_DEPLOYED_PLUGINS = "EVALRUNNER_PLUGINS"
#: Plugin modules evalrunner itself ships (kept out of the built-in catalog, loaded by the
#: runs that need them): every deployed function holds them, so an event may name them
#: without cdk.json ``plugins``. The red team's grader (a run event's ``redteam``).
SHIPPED_PLUGINS = frozenset({"evalrunner.redteam.grader"})

#: What a metric function may return: a number (bool: 1 or 0), or a score with its reason.
ScoreLike: TypeAlias = float | int | bool | Scored


class FunctionEvaluator(Evaluator[NoOptions]):
    """The evaluator :func:`metric` makes of a function: one metric, the function's score."""

    function: ClassVar[Callable[[Sample], ScoreLike]]
    in_defaults: ClassVar[bool] = False

    def score(self, sample: Sample) -> Mapping[str, Scored]:
        value = type(self).function(sample)
        spec = self.primary_metric()
        if isinstance(value, Scored):
            return {spec.name: value}
        if not isinstance(value, int | float):
            raise TypeError(
                f"the metric function returned {type(value).__name__}; return a number or "
                "evalrunner.Scored(value, reason)"
            )
        return {spec.name: Scored(float(value), f"{spec.name}: {float(value):.4g}")}


@dataclass(frozen=True)
class MetricFunction:
    """A function made a metric by :func:`metric`: still callable on a sample (so it can be
    tested like any function), and selectable in ``evaluate(metrics=[...])`` as itself."""

    function: Callable[[Sample], ScoreLike]
    evaluator: type[Evaluator]

    @property
    def name(self) -> str:
        return self.evaluator.name

    def __call__(self, sample: Sample) -> ScoreLike:
        return self.function(sample)


def metric(
    *,
    name: str,
    threshold: float = 0.5,
    higher_is_better: bool = True,
    description: str | None = None,
    inputs: Iterable[str] = ("answer",),
    low: float = 0.0,
    high: float = 1.0,
) -> Callable[[Callable[[Sample], ScoreLike]], MetricFunction]:
    """Decorator: make ``fn(sample) -> score`` a metric called ``name``.

    The function gets the case as evaluators see it (:class:`~evalrunner.evaluators.Sample`:
    ``question``, ``answer``, ``expected_answer``, ``contexts``, ``metadata``, ...) and returns
    a number in ``low``..``high`` or ``evalrunner.Scored(value, reason)``. A case passes when
    the score is at least ``threshold`` (at most, with ``higher_is_better=False``). A case
    missing one of ``inputs`` (case fields, default: the answer) is skipped with the reason;
    a function that raises makes that case's result an error, never the run's.
    """
    wanted = list(inputs)
    valid = {i.value: i for i in Input}
    unknown = [i for i in wanted if i not in valid]
    if unknown:
        raise ConfigError(
            f"@evalrunner.metric({name!r}): unknown inputs {unknown}; valid: {', '.join(valid)}"
        )
    if not isinstance(name, str) or not name.strip():
        raise ConfigError("@evalrunner.metric: name must be a non-empty string")

    def decorate(fn: Callable[[Sample], ScoreLike]) -> MetricFunction:
        text = description or (inspect.getdoc(fn) or name).splitlines()[0]
        spec = MetricSpec(
            name=name,
            description=text,
            higher_is_better=higher_is_better,
            threshold=float(threshold),
            low=low,
            high=high,
            primary=True,
        )
        attributes: dict[str, Any] = {
            "__module__": fn.__module__,
            "__qualname__": fn.__qualname__,
            "__doc__": text,
            "name": name,
            "description": text,
            "inputs": frozenset(valid[i] for i in wanted),
            "metrics": (spec,),
            "function": staticmethod(fn),
        }
        cls = type(_class_name(name), (FunctionEvaluator,), attributes)
        registry.register(cls)
        return MetricFunction(function=fn, evaluator=cls)

    return decorate


def _class_name(name: str) -> str:
    words = re.findall(r"[A-Za-z0-9]+", name)
    return "".join(w[:1].upper() + w[1:] for w in words) or "Metric"


def normalize(ref: str, environ: Mapping[str, str] | None = None) -> str:
    """How a run records a plugin: a module name as given, a file by its absolute path.

    In a deployed function (``environ``, default this process's, has
    ``AWS_LAMBDA_FUNCTION_NAME``) only the modules :data:`ENV_DEPLOYED_PLUGINS` lists are
    allowed: an event is untrusted input, and must not choose what code the function runs."""
    if not isinstance(ref, str) or not ref.strip():
        raise PluginError(f"plugin {ref!r}: give a module name (my_metrics) or a .py file path")
    ref = ref.strip()
    env = os.environ if environ is None else environ
    if env.get("AWS_LAMBDA_FUNCTION_NAME") and ref not in SHIPPED_PLUGINS:
        allowed = [p.strip() for p in env.get(ENV_DEPLOYED_PLUGINS, "").split(",") if p.strip()]
        if ref not in allowed:
            raise PluginError(
                f"plugin {ref!r}: a deployed run imports only the plugin modules its deployment "
                f"holds ({ENV_DEPLOYED_PLUGINS}: {', '.join(allowed) or 'none'}). Run it "
                "locally with --plugin, or add the module to the function code."
            )
    if ref.endswith(".py") or "/" in ref or "\\" in ref:
        path = Path(ref).expanduser().resolve()
        if not path.is_file():
            raise PluginError(f"plugin {ref!r}: no such file ({path})")
        return str(path)
    if not all(part.isidentifier() for part in ref.split(".")):
        raise PluginError(
            f"plugin {ref!r}: not a module name (like my_metrics or pkg.metrics) nor a .py path"
        )
    return ref


def load(refs: Iterable[str]) -> list[type[Evaluator]]:
    """Import each plugin (:func:`normalize`'s form) once; the evaluators each defines, in
    order. An Evaluator subclass a module defines without ``@register`` is registered too."""
    found: list[type[Evaluator]] = []
    for ref in refs:
        module = _import(ref)
        for cls in _evaluators_of(module):
            if cls not in found:
                found.append(cls)
    return found


def _import(ref: str) -> ModuleType:
    try:
        if ref.endswith(".py") or "/" in ref or "\\" in ref:
            return _import_file(Path(ref))
        return importlib.import_module(ref)
    except PluginError:
        raise
    except Exception as exc:  # the user's module: any failure is theirs to see, named
        raise PluginError(
            f"plugin {ref!r} could not be imported: {type(exc).__name__}: {exc}. "
            "A module name must be importable from here (installed, or on PYTHONPATH); "
            "a file is imported by its path."
        ) from exc


def _import_file(path: Path) -> ModuleType:
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:10]
    name = f"_evalrunner_plugin_{_class_name(path.stem).lower()}_{digest}"
    if name in sys.modules:  # imported once per process, like any module
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginError(f"plugin {str(path)!r}: not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    setattr(module, PATH_ATTRIBUTE, str(path))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _evaluators_of(module: ModuleType) -> list[type[Evaluator]]:
    """The evaluators ``module`` defines, registering plain subclasses it left unregistered."""
    catalog = registry.available()
    out: list[type[Evaluator]] = []
    for value in vars(module).values():
        found = value.evaluator if isinstance(value, MetricFunction) else value
        if not (inspect.isclass(found) and issubclass(found, Evaluator)):
            continue
        cls: type[Evaluator] = found
        if cls.__module__ != module.__name__ or inspect.isabstract(cls):
            continue
        if catalog.get(getattr(cls, "name", "")) is not cls:
            registry.register(cls)
        out.append(cls)
    return out


@registry.after_builtins
def load_entry_points() -> None:
    """Import every installed ``evalrunner.evaluators`` entry point (a module, an Evaluator
    subclass or a decorated function); called once, when the catalog is first loaded."""
    for entry in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            value = entry.load()
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(
                f"the entry point {entry.name} = {entry.value} (group {ENTRY_POINT_GROUP}) "
                f"could not be imported: {type(exc).__name__}: {exc}. Fix or uninstall the "
                "package that declares it."
            ) from exc
        if isinstance(value, ModuleType):
            _evaluators_of(value)
        elif inspect.isclass(value) and issubclass(value, Evaluator):
            if registry.available().get(getattr(value, "name", "")) is not value:
                registry.register(value)


def plugin_ref(cls: type[Evaluator]) -> str | None:
    """What a run carries to import ``cls`` again in another step: its file's path (a
    module imported from a path) or its module name; None for a built-in evaluator."""
    if registry.is_builtin(cls):
        return None
    module = sys.modules.get(cls.__module__)
    path = getattr(module, PATH_ATTRIBUTE, None)
    return path if isinstance(path, str) else cls.__module__


#: What ``evaluate(metrics=[...])`` takes: names, evaluator classes or objects (objects keep
#: their thresholds and options), and decorated functions, mixed.
MetricChoice: TypeAlias = str | Evaluator | type[Evaluator] | MetricFunction


@dataclass(frozen=True)
class Selection:
    """A Python metric list as the event states it: names, thresholds, options, plugins."""

    metrics: list[str]
    thresholds: dict[str, float]
    options: dict[str, dict[str, Any]]
    plugins: list[str]
    #: The named judge metrics among them (``GEval(name=...)``), as the event declares them.
    judge_metrics: list[dict[str, Any]]


def selection(choices: Sequence[MetricChoice]) -> Selection:
    """The event fields of ``choices``: every one becomes a name; an evaluator object adds
    the thresholds and options it was built with; a plugin's class adds its module."""
    names: list[str] = []
    thresholds: dict[str, float] = {}
    options: dict[str, dict[str, Any]] = {}
    plugins: list[str] = []
    declared: list[dict[str, Any]] = []
    for choice in choices:
        if isinstance(choice, str):
            names.append(choice)
            continue
        if isinstance(choice, MetricFunction):
            cls: type[Evaluator] = choice.evaluator
        elif isinstance(choice, Evaluator):
            cls = type(choice)
            thresholds.update(choice.chosen_thresholds())
            if choice.chosen_options:
                options[cls.name] = dict(choice.chosen_options)
        elif inspect.isclass(choice) and issubclass(choice, Evaluator):
            cls = choice
        else:
            raise ConfigError(
                f"metrics: {choice!r} is not a metric; give a name ('Rouge Metric'), an "
                "evaluator (Faithfulness(threshold=0.8)) or an @evalrunner.metric function"
            )
        declaration = judge_metrics.declared(cls)
        if declaration is not None:  # the run defines it again from its declaration
            declared.append(declaration.model_dump(exclude_none=True))
            names.append(cls.name)
            continue
        if registry.available().get(getattr(cls, "name", "")) is not cls:
            registry.register(cls)
        names.append(cls.name)
        ref = plugin_ref(cls)
        if ref is not None and ref not in plugins:
            plugins.append(ref)
    return Selection(names, thresholds, options, plugins, declared)
