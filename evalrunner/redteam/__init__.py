"""Red team: attacks generated against a target's purpose, run and graded like any suite.

A *plugin* (:mod:`evalrunner.redteam.plugins`) is one kind of vulnerability — prompt
injection, system-prompt extraction, PII extraction, ... — with what the judge is asked to
write as attacks and the rubric it grades the answers by, mapped to the OWASP Top 10 for LLM
Applications (2025) and the AVID taxonomy. A *strategy* (:mod:`evalrunner.redteam.strategies`)
transforms an attack (base64, leetspeak, ROT13, another language, a multi-turn escalation) to
get it past filters. The attacks become an ordinary suite run through the ordinary pipeline
(:func:`evalrunner.redteam.api.red_team`), graded by the ``Red team`` evaluator
(:mod:`evalrunner.redteam.grader`, loaded as a plugin module by every step); a successful
attack fails its case and the run, and becomes a typed finding in problems.json
(:mod:`evalrunner.redteam.findings`).

This module imports nothing heavy: Aggregate reads the plugin catalog through it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalrunner.redteam.api import red_team

__all__ = ["red_team"]


def __getattr__(name: str) -> Any:
    if name == "red_team":
        from evalrunner.redteam.api import red_team

        return red_team
    raise AttributeError(f"module 'evalrunner.redteam' has no attribute {name!r}")
