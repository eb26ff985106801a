"""The evaluator catalog: base contract, registry, and the evaluators themselves."""

from evalrunner.evaluators.base import (
    BatchEvaluator,
    Evaluator,
    Input,
    MetricResult,
    MetricSpec,
    Requirement,
    Sample,
    Scored,
)
from evalrunner.evaluators.registry import available, default_names, register, resolve, resolve_all

__all__ = [
    "BatchEvaluator",
    "Evaluator",
    "Input",
    "MetricResult",
    "MetricSpec",
    "Requirement",
    "Sample",
    "Scored",
    "available",
    "default_names",
    "register",
    "resolve",
    "resolve_all",
]
