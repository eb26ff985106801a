"""What the deployed workflow's tasks check before they trust the bucket
(:mod:`evalrunner.workflow.deployed`): that what a task copies fits its scratch folder, and
that a run a step's record names is one this workflow started, and that an object's key
copied into it stays inside it.

Both guard against ``workflows/<id>/`` as found, which anyone who can write the bucket can
change: an object dropped there (or runs' report sets grown large) would otherwise fill the
function's ``/tmp`` mid-copy and kill the task with an unhelpful ``No space left on device``;
a record pointing at another execution of the test runner would have that run's report
copied in as the step's."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from pathlib import Path

from evalrunner.errors import EventError
from evalrunner.workflow.config import Step

#: The execution names a run step gives its runs (``Deployed._start_run``): the workflow, the
#: step and 12 hex characters, cut to Step Functions' 80.
NAME_LENGTH = 80
RUN_HEX = 12
_HEX = re.compile(r"[0-9a-f]*")


def run_name(workflow_id: str, step: Step, hex12: str) -> str:
    """The execution name of ``step``'s run of ``workflow_id``."""
    return f"{workflow_id}-{step.value}-{hex12}"[:NAME_LENGTH]


def too_big(listed: Sequence[tuple[str, int]], limit: int, bucket: str) -> str | None:
    """Why the objects ``listed`` (key, size) do not fit one task's scratch folder of
    ``limit`` bytes, naming the total, the limit, the biggest objects and what to do; None
    when they fit."""
    total = sum(size for _, size in listed)
    if total <= limit:
        return None
    biggest = sorted(listed, key=lambda kv: -kv[1])[:3]
    named = ", ".join(f"s3://{bucket}/{key} ({_size(size)})" for key, size in biggest)
    return (
        f"workflow: this task would copy {_size(total)} into its scratch folder, more than a "
        f"task holds ({_size(limit)} of the function's /tmp); the biggest: {named}; delete "
        "what does not belong under the workflow's folder, or start the workflow with "
        "another workflow_id (smaller inputs, or fewer cases per run)"
    )


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB"


def not_ours(run_machine: str, workflow_id: str, step: Step, arn: str) -> str | None:
    """Why the execution ``arn`` a step's record names is not a run of ``run_machine`` this
    workflow's ``step`` started (its name is made by :func:`run_name`); None when it is."""
    executions = run_machine.replace(":stateMachine:", ":execution:", 1) + ":"
    name = arn[len(executions) :] if arn.startswith(executions) else ""
    prefix = run_name(workflow_id, step, "")
    rest = name[len(prefix) :] if name.startswith(prefix) else None
    if rest is not None and len(rest) == min(RUN_HEX, NAME_LENGTH - len(prefix)):
        if _HEX.fullmatch(rest):
            return None
    return (
        f"workflow: the {step.value} step's recorded run {arn} is not a run this workflow "
        f"started (its runs are executions of {run_machine} named {prefix}<12 hex>); "
        "workflow.json was changed by hand: start the workflow again with the same "
        "workflow_id to run the step again"
    )


def write_under(folder: Path, rel: str, data: bytes) -> Path:
    """``data`` at ``folder/rel``; a key whose rest is not a plain relative path (``..``,
    ``.``, empty segments: an object put there by hand) is refused, never written outside."""
    if (
        not rel
        or rel.startswith("/")
        or "\\" in rel
        or posixpath.normpath(rel) != rel
        or (".." in rel.split("/"))
    ):
        raise EventError(f"{rel!r}: an object whose key is not a plain path; remove it")
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path
