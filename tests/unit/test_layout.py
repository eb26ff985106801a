"""The unit tests mirror the code: tests/unit/<package>/ holds the tests of
evalrunner/<package>/ (or of lambdas/), and modules at the package root are tested at
tests/unit/ itself, so the test of a module is found where the module is."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"


def test_every_unit_test_folder_names_a_package() -> None:
    packages = {p.name for p in (ROOT / "evalrunner").iterdir() if (p / "__init__.py").is_file()}
    packages.add("lambdas")
    folders = {
        p.name
        for p in UNIT.iterdir()
        if p.is_dir() and p.name not in {"data", "__pycache__"} and any(p.glob("test_*.py"))
    }
    assert folders - packages == set(), "move these tests under the folder of their package"
