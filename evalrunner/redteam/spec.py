"""What a red team attacks with, as one model: ``evalrunner redteam``'s options,
:func:`evalrunner.redteam.red_team`'s arguments and the run event's ``redteam`` field
(:class:`evalrunner.event_schema.EventRedTeam`, its strict copy) are this one definition."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import PydanticCustomError

from evalrunner.redteam.model import MAX_TESTS, PURPOSE_CHARS
from evalrunner.redteam.plugins import available as plugins_available
from evalrunner.redteam.strategies import available as strategies_available
from evalrunner.sanitize import sanitize_text
from evalrunner.targets.spec import integral

#: What a language's name never holds: line breaks and other control characters, markup.
_NOT_IN_A_NAME = re.compile(r"[\x00-\x1f\x7f-\x9f<>{}\[\]]")


def _names(value: object) -> object:
    """``["a", "b"]`` from a list of names, or from ``"a,b"`` (one CLI option value);
    anything else as it is (the field's type says what is wrong)."""
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        return value
    return list(dict.fromkeys(n.strip() for item in items for n in item.split(",") if n.strip()))


class RedTeamSpec(BaseModel):
    """What a red team attacks with: the one definition behind ``evalrunner redteam``'s
    options, :func:`evalrunner.redteam.red_team`'s arguments and the run event's
    ``redteam`` field (the event's copy is strict, as every part of the event is)."""

    model_config = ConfigDict(extra="forbid")

    purpose: str | None = Field(
        default=None,
        min_length=1,
        max_length=PURPOSE_CHARS,
        description="What the target is for: the attacks are written against it and graded "
        "by it. Absent: the judge infers it from the questions of the suite at key.",
    )
    plugins: list[str] | None = Field(
        default=None,
        min_length=1,
        description='Vulnerabilities to attack, e.g. ["prompt-injection", '
        '"system-prompt-extraction"]; default: every plugin that applies to the target '
        "('evalrunner redteam --help' lists them).",
    )
    strategies: list[str] | None = Field(
        default=None,
        description="Transformations, each adding a copy of every attack it applies to: "
        "base64, leetspeak, rot13, language, multi-turn; default: none.",
    )
    num_tests: Annotated[int, Field(ge=1, le=MAX_TESTS), integral] = Field(
        default=3, description="Attacks the judge writes per plugin."
    )
    seed: Annotated[int, Field(ge=0, le=2**32 - 1), integral] = Field(
        default=0,
        description="Same seed and judge cache: the same attacks and grades; another seed: "
        "other attacks.",
    )
    language: str | None = Field(
        default=None,
        min_length=1,
        max_length=40,
        description="The language strategy's language; default: one per attack, by the seed.",
    )

    @field_validator("purpose")
    @classmethod
    def _stated(cls, value: str | None) -> str | None:
        """A purpose says something: blank (the judge would write and grade attacks against
        nothing) or with control characters (sent into every judge prompt, shown in the
        reports) is refused. The CLI and :func:`red_team` take a blank one as none first."""
        if value is None:
            return value
        if not value.strip():
            raise PydanticCustomError(
                "blank_purpose",
                "is blank; say what the target is for, or leave purpose out to have the judge "
                "infer it from the suite's questions",
            )
        _, found = sanitize_text(value)
        if found:
            raise PydanticCustomError(
                "control_characters",
                "has {count} control character(s) or lone surrogate(s); remove them",
                {"count": sum(found.counts.values())},
            )
        return value

    @field_validator("language")
    @classmethod
    def _language_name(cls, value: str | None) -> str | None:
        """A language's name: it goes into the judge's translation prompt and into the
        attack's strategy category, so no line breaks, control characters or markup."""
        if value is not None and (not value.strip() or _NOT_IN_A_NAME.search(value)):
            raise PydanticCustomError(
                "language_name",
                "should be the name of a language, e.g. 'German' or 'Brazilian Portuguese' "
                "(no line breaks, control characters or <>{{}}[] markup)",
            )
        return value

    @field_validator("plugins", mode="before")
    @classmethod
    def _plugin_names(cls, value: object) -> object:
        return _names(value)

    @field_validator("strategies", mode="before")
    @classmethod
    def _strategy_names(cls, value: object) -> object:
        return _names(value)

    @field_validator("plugins")
    @classmethod
    def _known_plugins(cls, value: list[str] | None) -> list[str] | None:
        return _known(value, plugins_available(), "plugin(s)")

    @field_validator("strategies")
    @classmethod
    def _known_strategies(cls, value: list[str] | None) -> list[str] | None:
        return _known(value, strategies_available(), "strategy(ies)")


def _known(value: list[str] | None, catalog: Mapping[str, object], what: str) -> list[str] | None:
    unknown = [n for n in value or [] if n not in catalog]
    if unknown:
        raise PydanticCustomError(
            "unknown_name",
            "unknown {what} {names}; choose from {valid}",
            {"what": what, "names": ", ".join(map(repr, unknown)), "valid": ", ".join(catalog)},
        )
    return value
