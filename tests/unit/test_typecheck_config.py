"""The type checker's configuration stays honest: strict on every package that ships or
deploys (the library, the handlers, the GPU task, the stack), and a module is
read as untyped only while its package really ships no type information."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mypy"]
UNTYPED = [
    pattern.removesuffix(".*")
    for override in CONFIG.get("overrides", [])
    if override.get("ignore_missing_imports")
    for pattern in override["module"]
]


def test_strict_on_the_package() -> None:
    assert CONFIG["strict"] is True
    assert CONFIG["files"] == ["evalrunner", "lambdas", "gpu_tasks", "infra", "state_machines"]
    assert CONFIG.get("ignore_missing_imports") is not True, "ignore per package, not globally"


def test_only_third_party_packages_are_read_as_untyped() -> None:
    assert UNTYPED, "the overrides name the untyped third-party packages"
    assert not [name for name in UNTYPED if name.split(".")[0] in {"evalrunner", "lambdas"}]
    assert all("*" not in name.removesuffix(".*") for name in UNTYPED), "name each package"


@pytest.mark.parametrize("package", UNTYPED)
def test_untyped_package_ships_no_types(package: str) -> None:
    """Once a package ships ``py.typed``, its override must go, so mypy checks our use of it."""
    spec = importlib.util.find_spec(package)
    # make test installs every extra, so a named package that is missing is a stale override
    assert spec is not None, f"{package} is not installed: drop its override from pyproject.toml"
    # a single-module distribution (rank_bm25.py) cannot carry py.typed: only stubs could type it
    for location in spec.submodule_search_locations or []:
        assert not (Path(location) / "py.typed").exists(), (
            f"{package} now ships type information: drop it from the ignore_missing_imports "
            "override in pyproject.toml"
        )
