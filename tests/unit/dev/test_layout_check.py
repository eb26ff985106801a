"""``python -m evalrunner.dev.layout``: the tree has no import cycle and its core imports
nothing from ``lambdas/``, and the check finds each kind of finding it reports when one is
planted in a small tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from evalrunner.dev import layout

ROOT = Path(__file__).resolve().parents[3]


def test_the_tree_has_no_import_cycle_and_no_core_import_of_lambdas() -> None:
    report = layout.check(ROOT)
    assert report.cycles == []
    # not even one closed only by a deferred or TYPE_CHECKING import (issue 30 item 5)
    assert report.deferred_cycles == []
    assert report.handler_imports == []


def test_no_pipeline_signature_takes_or_returns_a_plain_dict() -> None:
    # the steps take and return models (RunConfig carries a TargetSpec and a JudgeConfig)
    assert layout.check(ROOT).untyped_signatures == []


def test_the_command_reports_and_passes_on_the_tree() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "evalrunner.dev.layout"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "import cycles: none" in done.stdout
    assert "cycles through deferred or TYPE_CHECKING imports: none" in done.stdout
    assert "core imports from lambdas/: none" in done.stdout
    assert "dict[str, Any] in pipeline/ signatures:" in done.stdout
    assert "modules over 600 lines:" in done.stdout


def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_cycle_through_module_level_imports_fails_the_check(tmp_path: Path) -> None:
    root = plant(
        tmp_path,
        {
            "evalrunner/__init__.py": "",
            "evalrunner/a.py": "from evalrunner.b import x\n",
            "evalrunner/b.py": "from evalrunner import c\nx = 1\n",
            "evalrunner/c.py": "import evalrunner.a\n",
        },
    )
    report = layout.check(root)
    assert report.cycles == [["evalrunner.a", "evalrunner.b", "evalrunner.c"]]
    assert report.failed
    assert layout.main([str(root)]) == 1


def test_deferred_and_type_only_cycles_are_listed_apart_and_do_not_fail(tmp_path: Path) -> None:
    root = plant(
        tmp_path,
        {
            "evalrunner/__init__.py": "",
            "evalrunner/pkg/__init__.py": "from evalrunner.pkg.sub import y\n",
            # ``from package import submodule`` imports the submodule, not a package cycle
            "evalrunner/pkg/sub.py": "from evalrunner.pkg import other\ny = other.z\n",
            "evalrunner/pkg/other.py": "z = 1\n",
            "evalrunner/a.py": "from typing import TYPE_CHECKING\nimport evalrunner.b\n"
            "if TYPE_CHECKING:\n    from evalrunner.c import T\n",
            "evalrunner/b.py": "def f():\n    from evalrunner import a\n    return a\n",
            "evalrunner/c.py": "from . import a\nT = int\n",
        },
    )
    report = layout.check(root)
    assert report.cycles == []
    # one tangle of a, b and c: named by a shortest cycle through its first module
    assert report.deferred_cycles == [["evalrunner.a", "evalrunner.b"]]
    assert not report.failed
    assert layout.main([str(root)]) == 0


def test_a_core_import_of_lambdas_fails_even_inside_a_function(tmp_path: Path) -> None:
    root = plant(
        tmp_path,
        {
            "evalrunner/__init__.py": "",
            "evalrunner/launch.py": "def run():\n    from lambdas.local import p\n    return p\n",
        },
    )
    report = layout.check(root)
    assert report.handler_imports == ["evalrunner/launch.py:2 imports lambdas.local"]
    assert layout.main([str(root)]) == 1


def test_untyped_pipeline_signatures_and_long_modules_are_listed(tmp_path: Path) -> None:
    root = plant(
        tmp_path,
        {
            "evalrunner/__init__.py": "",
            "evalrunner/pipeline/__init__.py": "",
            "evalrunner/pipeline/step.py": "from typing import Any\n\n"
            "def typed(x: int) -> int:\n    return x\n\n"
            "def loose(event: dict[str, Any]) -> None:\n    return None\n\n"
            "def reply() -> dict[str, Any]:\n    return {}\n",
            "evalrunner/long.py": "x = 1\n" * (layout.MAX_LINES + 1),
            "evalrunner/short.py": "x = 1\n" * layout.MAX_LINES,
        },
    )
    report = layout.check(root)
    assert report.untyped_signatures == [
        "evalrunner/pipeline/step.py:6 loose",
        "evalrunner/pipeline/step.py:9 reply",
    ]
    assert report.long_modules == [f"evalrunner/long.py ({layout.MAX_LINES + 1} lines)"]
    assert not report.failed
