"""From the event's ``target`` object to a ready Target, and its report name without one.

``target_name`` exists separately because Prepare and Aggregate need the report folder but
should not build clients (or need credentials) for a target they never call. Which class
serves which kind is the registry's business (:mod:`evalrunner.targets.registry`).
"""

from __future__ import annotations

from typing import Any

import boto3

from evalrunner.targets._common import report_name
from evalrunner.targets.base import Target
from evalrunner.targets.registry import available, detect_kind, target_class
from evalrunner.targets.spec import TargetSpec

__all__ = ["TARGET_KINDS", "build_target", "detect_kind", "target_name"]

#: Kind key in the target object → the class that calls it (every registered kind).
TARGET_KINDS: dict[str, type[Target]] = available()


def target_name(spec: dict[str, Any]) -> str:
    """The report folder name (spec ``name`` wins), computed without building any client."""
    return report_name(spec, target_class(spec).own_name(spec))


def build_target(
    spec: TargetSpec | dict[str, Any], *, session: boto3.Session | None = None
) -> Target:
    """Build the target the spec names (a run's parsed spec, or a target object as written);
    ``session`` is used by the AWS kinds (tests, profiles).

    A target is built from its object as the user wrote it (:meth:`TargetSpec.as_written`):
    that is what each kind's constructor reads (a header value naming a secret, say), and it
    parses it into its own typed ``options``. Clients are created here, once, and shared by
    all threads calling ``invoke``.
    """
    written = spec.as_written() if isinstance(spec, TargetSpec) else spec
    return target_class(written)(written, session=session)
