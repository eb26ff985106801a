"""What a red-team run is made of: the attacks, and what a target offers to attack."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

#: The suite columns an attack case carries (kept in the case's metadata, read by the grader).
PLUGIN_KEY = "redteam_plugin"
GOAL_KEY = "redteam_goal"
STRATEGY_KEY = "redteam_strategy"
#: What was cut or cleaned in the judge's text of the attack (:func:`~evalrunner.redteam.plan.fit`).
NOTES_KEY = "redteam_notes"
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
#: The most attacks per plugin one run writes (each is a judge-written case, and each
#: strategy adds as many again).
MAX_TESTS = 50
#: Characters of one text of an attack the judge wrote (its message, document, goal or a
#: turn; a translation too) that reach the target; more is cut, with a note on the attack.
#: A real attack is a few hundred to a few thousand characters; a judge that writes a
#: megabyte (a loop, a padding attack on the runner) must not make every case that size.
MAX_ATTACK_CHARS = 20_000
#: Characters of the target's purpose, stated (``--purpose``, ``redteam.purpose``) or inferred
#: by the judge: it goes into every attack-writing and grading prompt and the run's settings.
PURPOSE_CHARS = 4000
#: Characters of one line saying what a red team did not test (it quotes the judge's error):
#: each is a problem's text and an option every step of the run reads.
UNTESTED_LINE_CHARS = 1000


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
    #: What was done to the judge's text before it could be sent (cut to
    #: :data:`MAX_ATTACK_CHARS`, control characters replaced), one line each.
    notes: list[str] = Field(default_factory=list)


class TargetTraits(BaseModel):
    """What the target under attack can be attacked through."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The target kind (``openai``, ``url``, ``agentId``, ...).
    kind: str
    #: The target sends the case's contexts to the model (an indirect injection reaches it).
    takes_contexts: bool = False
    #: The target is an agent that calls tools (excessive agency applies).
    has_tools: bool = False
