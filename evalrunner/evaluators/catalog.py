"""Imports every evaluator module so their ``@register`` decorators run."""

from evalrunner.evaluators import lexical  # noqa: F401
