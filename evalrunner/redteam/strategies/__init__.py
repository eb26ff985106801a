"""The red-team strategies, one module each; :func:`available` imports them all."""

from __future__ import annotations

import importlib
import pkgutil

from evalrunner.redteam.strategies.base import Strategy, StrategyTools, registered, strategy

__all__ = ["Strategy", "StrategyTools", "available", "strategy"]


def available() -> dict[str, type[Strategy]]:
    """Every strategy, by id, in the order of their modules' names."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name != "base":
            importlib.import_module(f"{__name__}.{info.name}")
    return dict(sorted(registered().items()))
