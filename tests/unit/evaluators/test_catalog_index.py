"""The catalog index (issue 31 goal 1): resolving a built-in metric name imports the one module
that registers it, found in the generated ``evalrunner/evaluators/catalog_index.py``, instead
of every evaluator module; everything that needs the whole catalog (listing it, the default
selection, an unknown name and its suggestion, plugins) still gets it. Checks that depend on
what a process has imported run in a fresh interpreter (this one has the whole catalog)."""

from __future__ import annotations

import json
import subprocess
import sys

from evalrunner.dev import catalog_index
from evalrunner.evaluators import registry
from evalrunner.evaluators.catalog_index import MODULES

FRESH = """
import json, sys
from evalrunner.evaluators import registry
from evalrunner.evaluators.catalog_index import MODULES
{body}
evaluator_modules = sorted(m for m in set(MODULES.values()) if m in sys.modules)
print("STATE " + json.dumps({{"loaded": registry._loaded, "evaluator_modules": evaluator_modules,
                              "out": out}}))
"""


def fresh(body: str) -> dict[str, object]:
    """Run ``body`` (which sets ``out``) in a new interpreter: whether the whole catalog was
    loaded, which evaluator modules were imported, and ``out``."""
    done = subprocess.run(
        [sys.executable, "-c", FRESH.format(body=body)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("STATE ")), None)
    assert line is not None, done.stdout[-2000:] + done.stderr[-2000:]
    state: dict[str, object] = json.loads(line[len("STATE ") :])
    return state


def test_the_shipped_index_is_the_generated_one() -> None:
    """A new evaluator, a renamed one, a new alias or a moved class changes the index: the
    shipped file must follow (it is generated, never edited by hand)."""
    shipped = catalog_index.SHIPPED.read_text("utf-8")
    assert shipped == catalog_index.render(), (
        "evalrunner/evaluators/catalog_index.py is stale: run `python -m "
        "evalrunner.dev.catalog_index`"
    )


def test_the_index_holds_every_built_in_name_and_alias() -> None:
    for cls in registry.available().values():
        if not registry.is_builtin(cls):
            continue
        for alias in (cls.name, *cls.aliases):
            assert registry.resolve(alias) is cls
            assert MODULES[registry._key(alias)] == cls.__module__


def test_resolving_a_built_in_name_imports_only_its_module() -> None:
    state = fresh('out = [c.name for c in registry.resolve_all(["rouge metric", "Exact_Match"])]')
    assert state["out"] == ["Rouge Metric", "Exact match"]
    assert state["evaluator_modules"] == ["evalrunner.evaluators.lexical"]
    assert state["loaded"] is False  # no other evaluator module, no entry point scanned


def test_every_built_in_name_resolves_from_its_module_alone() -> None:
    """For each module of the index, in a new process: its names resolve to its classes
    without the whole catalog, and the classes are the same as the catalog's."""
    by_module: dict[str, list[str]] = {}
    for key, module in MODULES.items():
        by_module.setdefault(module, []).append(key)
    body = f"""
out = {{}}
for module, keys in {by_module!r}.items():
    out[module] = sorted({{registry.resolve(k).__module__ for k in keys}})
"""
    state = fresh(body)
    assert state["out"] == {module: [module] for module in by_module}
    assert state["loaded"] is False


def test_an_unknown_name_is_refused_with_the_whole_catalog_as_before() -> None:
    """The suggestion and the list of valid names need every name: an unknown name loads the
    whole catalog first, so the message is the one a fully loaded process gives."""
    body = """
from evalrunner.errors import ConfigError
registry.resolve("BLEU")  # a module imported on its own first
try:
    registry.resolve("Rouge Metrc")
except ConfigError as exc:
    out = exc.message
"""
    state = fresh(body)
    expected = (
        "unknown metric 'Rouge Metrc'. Did you mean 'Rouge Metric'? Valid names: "
        f"{', '.join(registry.available())}."
    )
    assert state["out"] == expected
    assert state["loaded"] is True


def test_a_metric_name_still_names_its_evaluator() -> None:
    body = """
from evalrunner.errors import ConfigError
try:
    registry.resolve("ROUGE-L")
except ConfigError as exc:
    out = exc.message
"""
    assert "'ROUGE-L' is a metric of the evaluator 'Rouge Metric'" in str(fresh(body)["out"])


def test_the_catalog_order_is_the_same_after_modules_imported_one_by_one() -> None:
    """Modules imported by name, late ones first, then the whole catalog: the order of
    ``evalrunner metrics``, the default selection and the report columns is unchanged."""
    body = """
for name in ("Perplexity", "Faithfulness", "BLEU"):
    registry.resolve(name)
out = [list(registry.available()), registry.default_names(with_judge=True)]
"""
    state = fresh(body)
    assert state["out"] == [list(registry.available()), registry.default_names(with_judge=True)]


def test_a_plugin_after_a_lazy_resolve_is_checked_against_the_whole_catalog() -> None:
    """A user's metric registered after a built-in name resolved alone is still refused a
    built-in evaluator's or metric's name (the catalog loads first), and its own name
    resolves through the whole catalog."""
    body = """
from evalrunner.errors import PluginError
from evalrunner.evaluators import Evaluator, Input, MetricSpec
registry.resolve("Exact match")

def plugin(name, metric):
    return type("Mine", (Evaluator,), {"__module__": "my_metrics", "name": name,
        "description": "x", "inputs": frozenset({Input.ANSWER}),
        "metrics": (MetricSpec(metric, "x", primary=True),), "score": lambda self, s: {}})

out = []
try:
    registry.register(plugin("Mine", "Perplexity"))  # a model metric's name, not imported yet
except PluginError as exc:
    out.append(exc.message)
mine = registry.register(plugin("Mine", "Mine score"))
out.append(registry.resolve("mine") is mine)
"""
    state = fresh(body)
    refused, found = state["out"]  # type: ignore[misc]
    assert "'Perplexity'" in refused and "already taken by the built-in evaluator" in refused
    assert found is True
    assert state["loaded"] is True
