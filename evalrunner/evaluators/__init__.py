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
    SkipCase,
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
    "SkipCase",
    "available",
    "default_names",
    "register",
    "resolve",
    "resolve_all",
]
