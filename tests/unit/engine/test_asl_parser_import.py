"""moto's ASL parser without moto's Batch and EC2 models (issue 31 goal 1;
evalrunner/engine/asl_parser.py says what it relies on). Each check runs in a fresh
interpreter, since what is asserted is which modules an import leaves in ``sys.modules``."""

from __future__ import annotations

import subprocess
import sys


def run_fresh(body: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", body], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def test_the_engine_imports_the_parser_without_batch_or_ec2() -> None:
    run_fresh(
        """
import sys
import evalrunner.engine.local
from evalrunner.engine.asl_parser import AmazonStateLanguageParser
from moto.stepfunctions.parser.asl.parse import asl_parser
assert AmazonStateLanguageParser is asl_parser.AmazonStateLanguageParser
heavy = [m for m in sys.modules if m.startswith(("moto.batch", "moto.ec2"))]
assert heavy == [], heavy
"""
    )


def test_batch_still_imports_whole_afterwards() -> None:
    """Nothing of the unexecuted package is left behind: a later ``import moto.batch`` runs
    the package's ``__init__`` (its backends, its submodules as attributes), and the parser's
    Batch task compares Batch's status strings as before."""
    run_fresh(
        """
import sys
import evalrunner.engine.moto_compat
import moto.batch.utils
from moto.batch import batch_backends
assert moto.batch.utils.JobStatus.SUCCEEDED == "SUCCEEDED"
assert "moto.ec2.models" in sys.modules
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_batch as task,
)
assert "SUCCEEDED" == task.JobStatus.SUCCEEDED and "FAILED" == task.JobStatus.FAILED
"""
    )


def test_a_layout_that_no_longer_allows_it_falls_back_to_the_ordinary_import() -> None:
    """If ``moto.batch.utils`` cannot load without the package (simulated: its sibling made
    unimportable), the parser is imported the ordinary way: slower, still whole."""
    run_fresh(
        """
import sys
import moto.batch.exceptions  # the whole package, then hide a piece of it from a fresh try
for name in [n for n in sys.modules if n.startswith("moto.batch")]:
    del sys.modules[name]
sys.modules["moto.batch.exceptions"] = None
from evalrunner.engine import asl_parser
assert asl_parser.AmazonStateLanguageParser.__module__.startswith("moto.stepfunctions")
assert hasattr(sys.modules["moto.batch"], "batch_backends")
"""
    )
