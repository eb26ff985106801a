"""Perturbed inputs for robustness testing: deterministic perturbators (typos, OCR errors,
synonyms, ...), the spec an event gives them with, and how Prepare applies them to cases.
The flip analysis that reads their results is :mod:`evalrunner.reports.analysis.robustness`."""

from evalrunner.perturb.registry import KINDS, Perturbator, perturb_case, perturb_text, resolve
from evalrunner.perturb.spec import VARIANT, Perturbation, PerturbationSpec

__all__ = [
    "KINDS",
    "VARIANT",
    "Perturbation",
    "PerturbationSpec",
    "Perturbator",
    "perturb_case",
    "perturb_text",
    "resolve",
]
