"""Evaluators registered by display name, so adding one touches one file and one test.

An evaluator module registers its classes with ``@register``; nothing else names it. The
whole catalog (listing it, the default selection, a name it does not know) imports every
module and package directly inside :mod:`evalrunner.evaluators` (:func:`pkgutil.iter_modules`:
a plain directory listing, the same in a checkout, a wheel and the Lambda package), which runs
those decorators. Resolving a built-in name imports only the module that registers it, found
in :mod:`evalrunner.evaluators.catalog_index` (generated from the decorators by
``python -m evalrunner.dev.catalog_index``; a test fails while it is stale): a run selecting
ROUGE pays for ROUGE's module, not for forty others and numpy (issue 31 goal 1). The
catalog order — that of ``evalrunner metrics``, of the default selection and so of the
reports' columns — is each module's ``CATALOG_POSITION`` (a number; modules without one
come last, by name), then the order of registration within the module.

Evaluators from the user's own code (:mod:`evalrunner.evaluators.plugins`: ``--plugin``, the
event's ``plugins``, the ``evalrunner.evaluators`` entry point group) register here too, after
the catalog and checked against it: a name a built-in evaluator or metric already has is
refused (:class:`~evalrunner.errors.PluginError`), since thresholds, gates and report columns
name metrics and two of one name would make them ambiguous. They come after the built-in
ones in every listing and never join the default selection of an event that names no metric.
"""

from __future__ import annotations

import difflib
import importlib
import math
import pkgutil
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from evalrunner.errors import ConfigError, PluginError
from evalrunner.evaluators.base import Evaluator, MetricSpec, Requirement

_REGISTRY: dict[str, type[Evaluator]] = {}
_LOOKUP: dict[str, str] = {}


def _key(name: str) -> str:
    """Case, ``_``, ``-`` and spacing forgiven, and a trailing "Evaluator" (H2O Eval Studio
    writes "Encoding Guardrail Evaluator" for "Encoding guardrail")."""
    key = " ".join(name.casefold().replace("_", " ").replace("-", " ").split())
    return key.removesuffix(" evaluator") if key != "evaluator" else key


E = TypeVar("E", bound=type[Evaluator])


def is_builtin(cls: type[Evaluator]) -> bool:
    """Whether ``cls`` is one of this package's evaluators (not a plugin's)."""
    return cls.__module__ == PACKAGE or cls.__module__.startswith(f"{PACKAGE}.")


def register(cls: E) -> E:
    """Class decorator: make ``cls`` selectable by its name and aliases.

    Metric names are unique across evaluators: thresholds and gates name metrics, and a
    name shared by two evaluators would make them ambiguous. A plugin's clash is the user's
    to fix (:class:`PluginError`); a built-in's is a bug of this package (RuntimeError).
    """
    if not is_builtin(cls):
        _ensure_loaded()  # a plugin is checked against the whole catalog
        with _load_lock:
            _register_plugin(cls)
        return cls
    for other in _REGISTRY.values():
        if other.name == cls.name:
            continue
        shared = {m.name for m in other.metrics} & {m.name for m in cls.metrics}
        if shared:
            raise RuntimeError(f"{cls.name!r} reuses metric names of {other.name!r}: {shared}")
    for alias in (cls.name, *cls.aliases):
        key = _key(alias)
        if key in _LOOKUP and _LOOKUP[key] != cls.name:
            raise RuntimeError(f"evaluator name {alias!r} is already taken by {_LOOKUP[key]!r}")
        _LOOKUP[key] = cls.name
    _REGISTRY[cls.name] = cls
    return cls


def _register_plugin(cls: type[Evaluator]) -> None:
    where = f"{cls.__qualname__} in {cls.__module__}"
    missing = [a for a in ("name", "description", "inputs", "metrics") if not hasattr(cls, a)]
    if missing or not getattr(cls, "metrics", ()):
        raise PluginError(
            f"{where}: an Evaluator subclass must set {', '.join(missing) or 'metrics'} "
            "(see 'Writing a metric' in the README)"
        )
    for other in list(_REGISTRY.values()):
        if other.__module__ == cls.__module__ and other.__qualname__ == cls.__qualname__:
            _unregister(other)  # the same definition again (a module or cell run twice)
    metric_owners = {_key(m.name): c for c in _REGISTRY.values() for m in c.metrics}
    for name in dict.fromkeys((cls.name, *cls.aliases, *(m.name for m in cls.metrics))):
        owner = _REGISTRY.get(_LOOKUP.get(_key(name), "")) or metric_owners.get(_key(name))
        if owner is None:
            continue
        kind = "built-in evaluator" if is_builtin(owner) else f"plugin {owner.__module__}'s"
        raise PluginError(
            f"metric name {name!r} ({where}) is already taken by the {kind} {owner.name!r}: "
            "give yours another name (name=... in @evalrunner.metric, or the class's name "
            "and metrics). 'evalrunner metrics' lists the names in use."
        )
    for alias in (cls.name, *cls.aliases):
        _LOOKUP[_key(alias)] = cls.name
    _REGISTRY[cls.name] = cls


def owner_of(name: str) -> type[Evaluator] | None:
    """The evaluator that has ``name`` as its name, an alias or a metric's name (case,
    spaces, ``-`` and ``_`` forgiven), or None: whether ``name`` is free for a new metric."""
    _ensure_loaded()
    with _load_lock:
        found = _REGISTRY.get(_LOOKUP.get(_key(name), ""))
        if found is not None:
            return found
        return next(
            (c for c in _REGISTRY.values() if any(_key(m.name) == _key(name) for m in c.metrics)),
            None,
        )


def unregister(cls: type[Evaluator]) -> None:
    """Take a metric of the user's (never a built-in one) out of the catalog: a named judge
    metric that a later run of this process declares again with other settings."""
    if is_builtin(cls):
        raise RuntimeError(f"{cls.name!r} is a built-in evaluator")
    with _load_lock:
        if _REGISTRY.get(cls.name) is cls:
            _unregister(cls)


def _unregister(cls: type[Evaluator]) -> None:
    _REGISTRY.pop(cls.name, None)
    for key in [k for k, v in _LOOKUP.items() if v == cls.name]:
        del _LOOKUP[key]


#: The package whose modules are the catalog.
PACKAGE = "evalrunner.evaluators"
_loaded = False
_loading = False
_load_lock = threading.RLock()
#: What runs once every built-in module has registered: the installed entry points'
#: evaluators (:mod:`evalrunner.evaluators.plugins` adds its loader when the package scan
#: imports it, as every evaluator module registers itself), so a plugin is checked against
#: the whole built-in catalog and the registry imports no plugin code itself.
_AFTER_BUILTINS: list[Callable[[], None]] = []


def after_builtins(loader: Callable[[], None]) -> Callable[[], None]:
    """Run ``loader`` when the catalog is first loaded, after every built-in evaluator."""
    _AFTER_BUILTINS.append(loader)
    return loader


def _ensure_loaded() -> None:
    """Import every module of :data:`PACKAGE` once (their ``@register`` decorators run),
    then put the registry in catalog order."""
    global _loaded, _loading
    if _loaded:
        return
    with _load_lock:
        # another thread finished while this one waited for the lock; or this thread is the
        # one loading, and an entry point's evaluator is registering (checked when done)
        if _is_loaded() or _loading:
            return
        _loading = True
        try:
            package = importlib.import_module(PACKAGE)
            for module in pkgutil.iter_modules(package.__path__, f"{PACKAGE}."):
                importlib.import_module(module.name)
            for loader in _AFTER_BUILTINS:  # the entry points (plugins.py), checked against all
                loader()
        finally:
            _loading = False
        ordered = sorted(_REGISTRY.values(), key=_catalog_key)  # stable: keeps module order
        _REGISTRY.clear()
        _REGISTRY.update((cls.name, cls) for cls in ordered)
        _loaded = True


def _is_loaded() -> bool:
    # A function call, so the type checker does not take the flag for False after the
    # unlocked check above (double-checked locking).
    return _loaded


def _catalog_key(cls: type[Evaluator]) -> tuple[float, str]:
    """Where ``cls`` comes in the catalog: the ``CATALOG_POSITION`` of its module (for a
    module inside a package of the catalog, that package's), then the module's name."""
    module = cls.__module__
    if module.startswith(f"{PACKAGE}."):
        module = ".".join(module.split(".")[: PACKAGE.count(".") + 2])
    position = getattr(sys.modules.get(module), "CATALOG_POSITION", math.inf)
    return (float(position), module)


def available() -> dict[str, type[Evaluator]]:
    """Every registered evaluator by display name, in catalog order."""
    _ensure_loaded()
    return dict(_REGISTRY)


#: Judge metrics a run gets by default when it configures a judge but names no metric: the
#: five RAG metrics users ask for by name, which share their calls (5 per case together).
JUDGE_DEFAULTS = (
    "Faithfulness",
    "Answer Relevancy",
    "Contextual Precision",
    "Contextual Recall",
    "Contextual Relevancy",
)


def default_names(*, with_judge: bool = False) -> list[str]:
    """What runs when the event names no metric: everything that needs no model and no
    judge, plus the five RAG judge metrics when a judge is configured."""
    names = [
        n
        for n, c in available().items()
        if c.requires is Requirement.NOTHING and c.in_defaults and is_builtin(c)
    ]
    if with_judge:
        names += [n for n in JUDGE_DEFAULTS if n in _REGISTRY]
    return names


def index() -> dict[str, str]:
    """Every built-in evaluator's name and alias, by lookup key, to the module that registers
    it: what :mod:`evalrunner.evaluators.catalog_index` holds (``python -m
    evalrunner.dev.catalog_index`` writes it from here; the whole catalog is loaded)."""
    return {
        _key(alias): cls.__module__
        for cls in available().values()
        if is_builtin(cls)
        for alias in (cls.name, *cls.aliases)
    }


def _indexed(key: str) -> type[Evaluator] | None:
    """The evaluator registered under ``key`` so far, or, for a built-in name the catalog index
    knows, after importing only the module that registers it; None: look in the whole catalog.
    """
    from evalrunner.evaluators.catalog_index import MODULES

    with _load_lock:
        canonical = _LOOKUP.get(key)
        if canonical is None and key in MODULES:
            importlib.import_module(MODULES[key])  # its @register runs (once per process)
            canonical = _LOOKUP.get(key)
        return None if canonical is None else _REGISTRY[canonical]


def find(name: str) -> type[Evaluator] | None:
    """The evaluator of a user-typed name (case, spaces, '-' and '_' are forgiven), or None
    where the catalog has none. A built-in name imports its own module only; any other name
    loads the whole catalog (plugins' entry points included) before it is looked up."""
    found = _indexed(_key(name))
    if found is not None:
        return found
    _ensure_loaded()
    canonical = _LOOKUP.get(_key(name))
    return None if canonical is None else _REGISTRY[canonical]


def resolve(name: str) -> type[Evaluator]:
    """The evaluator class for a user-typed name, as :func:`find`; an unknown name is refused
    with the closest valid one and the list of them."""
    found = find(name)
    if found is not None:
        return found
    metric_owner = _metric_owner(name)
    if metric_owner is not None:
        raise ConfigError(
            f"{name!r} is a metric of the evaluator {metric_owner!r}: select "
            f"{metric_owner!r} (it reports {name!r} among its metrics)."
        )
    close = difflib.get_close_matches(name, list(_REGISTRY), n=1, cutoff=0.6)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise ConfigError(f"unknown metric {name!r}.{hint} Valid names: {', '.join(_REGISTRY)}.")


#: Names that select several evaluators at once: the HR evaluation plan's one column for
#: ROUGE and BLEU, as it spells it ("ROUGE/BLUE") and as it means it.
GROUPS: dict[str, tuple[str, ...]] = {
    "rouge/blue": ("Rouge Metric", "BLEU"),
    "rouge/bleu": ("Rouge Metric", "BLEU"),
}


def resolve_all(names: Iterable[str]) -> list[type[Evaluator]]:
    """Resolve names in order without duplicates (a :data:`GROUPS` name to each of its
    evaluators); every unknown name is reported at once."""
    classes: list[type[Evaluator]] = []
    problems: list[str] = []
    for written in names:
        for name in GROUPS.get(_key(written), (written,)):
            try:
                cls = resolve(name)
            except ConfigError as exc:
                problems.append(exc.message)
                continue
            if cls not in classes:
                classes.append(cls)
    if problems:
        raise ConfigError("\n".join(problems))
    return classes


def _metric_owner(metric: str) -> str | None:
    for cls in _REGISTRY.values():
        if any(_key(m.name) == _key(metric) for m in cls.metrics):
            return cls.name
    return None


def gated_metric(classes: Iterable[type[Evaluator]], name: str) -> MetricSpec | None:
    """The metric a threshold or gate named ``name`` applies to: the metric of that name, else
    the primary metric of the evaluator of that name (metric names come first, as in
    :meth:`Evaluator.__init__` and ``evaluate_gates``); None when it names neither."""
    classes = list(classes)
    for cls in classes:
        for spec in cls.metrics:
            if spec.name == name:
                return spec
    return next((c.primary_metric() for c in classes if c.name == name), None)


def metric_names(classes: Iterable[type[Evaluator]]) -> dict[str, str]:
    """Metric name → owning evaluator name, for validating thresholds and gates."""
    return {m.name: c.name for c in classes for m in c.metrics}
