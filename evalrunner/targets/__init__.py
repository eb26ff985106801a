"""Targets: the systems under test, each in its own module, all answering with one shape.

The factory is exported lazily so that importing ``evalrunner.targets.base`` (for
``TargetResponse``) does not pull in boto3 and urllib3 for code that never calls a target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrunner.targets.adapters import normalise
    from evalrunner.targets.base import Target, TargetResponse
    from evalrunner.targets.factory import TARGET_KINDS, build_target, detect_kind, target_name

__all__ = [
    "TARGET_KINDS",
    "Target",
    "TargetResponse",
    "build_target",
    "detect_kind",
    "normalise",
    "target_name",
]

_EXPORTS = {
    "Target": "evalrunner.targets.base",
    "TargetResponse": "evalrunner.targets.base",
    "normalise": "evalrunner.targets.adapters",
    "TARGET_KINDS": "evalrunner.targets.factory",
    "build_target": "evalrunner.targets.factory",
    "detect_kind": "evalrunner.targets.factory",
    "target_name": "evalrunner.targets.factory",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'evalrunner.targets' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
