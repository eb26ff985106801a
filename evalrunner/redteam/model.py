"""What a red-team run is made of: the attacks, and what a target offers to attack."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: The suite columns an attack case carries (kept in the case's metadata, read by the grader).
PLUGIN_KEY = "redteam_plugin"
GOAL_KEY = "redteam_goal"
STRATEGY_KEY = "redteam_strategy"
#: The category every attack case has, and the prefixes of its plugin and strategy categories
#: (the findings and the per-category results of the report are read from these).
CATEGORY = "red team"
PLUGIN_PREFIX = "redteam:"
STRATEGY_PREFIX = "strategy:"
#: The grader evaluator and its metric (:mod:`evalrunner.redteam.grader`).
GRADER = "Red team"
METRIC = "Attack resisted"
#: The strategy name of an attack as its plugin wrote it.
BASE = "none"


class Attack(BaseModel):
    """One attack: what the user sends, and for an indirect injection the document that
    carries it (sent to the target as a retrieved context)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The plugin that wrote it.
    plugin: str
    #: What the attacker wants the target to do (the grader judges whether it did).
    goal: str = Field(min_length=1)
    #: The user's message; for a multi-turn attack its last turn.
    prompt: str = Field(min_length=1)
    #: The retrieved document an indirect injection hides its instruction in.
    context: str | None = None
    #: The user's earlier turns of a multi-turn attack, in order (answered by the target).
    turns: list[str] = Field(default_factory=list)
    #: The strategy that transformed it (``none``: as the plugin wrote it).
    strategy: str = BASE


class TargetTraits(BaseModel):
    """What the target under attack can be attacked through."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The target kind (``openai``, ``url``, ``agentId``, ...).
    kind: str
    #: The target sends the case's contexts to the model (an indirect injection reaches it).
    takes_contexts: bool = False
    #: The target is an agent that calls tools (excessive agency applies).
    has_tools: bool = False
