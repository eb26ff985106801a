"""Where the demo suite comes from: ``test_suites/demo-hr.xlsx`` in a checkout, generated from
:data:`evalrunner.demo.cases.DEMO_CASES` (the source of truth) when the package is installed
without the repository."""

from __future__ import annotations

import tempfile
from pathlib import Path

from evalrunner.demo.cases import DEMO_CASES

REPO_SUITE = Path(__file__).resolve().parents[2] / "test_suites" / "demo-hr.xlsx"


def write_demo_suite(path: Path) -> Path:
    from evalrunner.suite.template import write_suite_xlsx

    return write_suite_xlsx(path, DEMO_CASES)


def demo_suite_path() -> Path:
    if REPO_SUITE.is_file():
        return REPO_SUITE
    return write_demo_suite(Path(tempfile.mkdtemp(prefix="evalrunner-demo-")) / "demo-hr.xlsx")
