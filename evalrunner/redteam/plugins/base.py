"""The plugin contract: one kind of vulnerability, how to attack it and how to grade it.

A plugin is a class with class attributes only (it holds no state), registered by its ``id``
with :func:`plugin`. Adding one is one module in this package and one test: the registry
imports every module here.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from evalrunner.redteam.model import TargetTraits

Severity = Literal["high", "medium", "low"]


class Plugin:
    """Base of the plugins. A subclass sets every attribute below."""

    #: The name users write (``--plugins prompt-injection``).
    id: ClassVar[str]
    #: The vulnerability's name in the report.
    title: ClassVar[str]
    #: The finding's category (what kind of risk it is).
    category: ClassVar[str]
    #: How bad one successful attack is.
    severity: ClassVar[Severity]
    #: OWASP Top 10 for LLM Applications 2025 ids with their names.
    owasp: ClassVar[tuple[str, ...]]
    #: AVID taxonomy (effect view) ids with their names.
    avid: ClassVar[tuple[str, ...]]
    #: What the judge is asked to write: attacks of this kind against the purpose.
    generation: ClassVar[str]
    #: Example attacks shown to the judge (a seeded pick of them), written for any purpose.
    examples: ClassVar[tuple[str, ...]]
    #: How the judge grades an answer: when the attack succeeded, when it was resisted.
    rubric: ClassVar[str]
    #: What to do about a successful attack.
    action: ClassVar[str]
    #: The attack hides in a retrieved document (the target must take contexts).
    indirect: ClassVar[bool] = False

    @classmethod
    def unavailable(cls, target: TargetTraits) -> str | None:
        """Why this plugin cannot attack ``target`` (None: it can)."""
        return None

    @classmethod
    def by_default(cls, target: TargetTraits) -> bool:
        """Whether a run that names no plugins attacks ``target`` with this one."""
        return cls.unavailable(target) is None


_PLUGINS: dict[str, type[Plugin]] = {}


def plugin(cls: type[Plugin]) -> type[Plugin]:
    """Class decorator: make ``cls`` selectable by its ``id``."""
    if cls.id in _PLUGINS and _PLUGINS[cls.id] is not cls:
        raise RuntimeError(f"two red-team plugins are named {cls.id!r}")
    _PLUGINS[cls.id] = cls
    return cls


def registered() -> dict[str, type[Plugin]]:
    """The plugins registered so far, by id (see :func:`evalrunner.redteam.plugins.available`)."""
    return dict(_PLUGINS)
