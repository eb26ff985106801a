"""The process's evaluator catalog put back as it was after a test that registers metrics.

Plugins and declared judge metrics register in the one process-wide catalog (as they do in a
user's process); a test that adds some must leave it, and ``sys.modules``, as it found them,
or a later test would see its metrics. One helper for every such test, so the registry's
private tables are touched in one place."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from evalrunner.evaluators import registry


@contextmanager
def restored_catalog(*module_prefixes: str) -> Iterator[None]:
    """Restore the catalog on exit, and forget the modules a test imported whose names start
    with one of ``module_prefixes`` (plugin modules written by the test)."""
    registry.available()
    saved = dict(registry._REGISTRY), dict(registry._LOOKUP)
    modules = set(sys.modules)
    try:
        yield
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved[0])
        registry._LOOKUP.clear()
        registry._LOOKUP.update(saved[1])
        for name in set(sys.modules) - modules:
            if module_prefixes and name.startswith(module_prefixes):
                del sys.modules[name]
