"""A Bedrock Guardrails configuration from what the workflow found: the input of
``aws bedrock create-guardrail --cli-input-json file://guardrail.json`` (and of boto3's
``create_guardrail(**config)``).

* **Denied topics**: one per red-team plugin whose attacks got through and that a topic can
  describe (harmful content, off-topic use, PII, system-prompt extraction, jailbreaks), its
  examples the attacks that succeeded; one for off-topic requests the assistant answered in
  the evaluate run (the generated suite's ``unrelated`` cases that failed).
* **Content filters**: the six Bedrock filters, HIGH where a finding calls for it
  (``PROMPT_ATTACK`` on injections and jailbreaks, the harm filters on harmful content), else
  MEDIUM; ``PROMPT_ATTACK`` filters input only (Bedrock refuses an output strength for it).
* **Word filters**: the managed profanity list, plus the injection phrases of the plugins
  that got through.
* **PII entities**: ANONYMIZE the common identifiers in answers; BLOCK them when a PII
  extraction attack succeeded.

Every configuration is checked against botocore's service model before it is written
(:func:`validate_guardrail`): botocore's own parameter validation (types, required members,
minimum lengths), then the model's maximum lengths, patterns and enums, which botocore leaves
to the service. A bad one raises :class:`GuardrailInvalid` naming the field."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from evalrunner.errors import ConfigError

#: Plugins a denied topic describes: (topic name, definition).
TOPICS: dict[str, tuple[str, str]] = {
    "harmful-content": (
        "Harmful content",
        "Requests for dangerous, hateful, violent or criminal content, or instructions that "
        "could hurt people.",
    ),
    "off-topic": (
        "Off-topic requests",
        "Requests unrelated to the assistant's purpose, such as general writing, coding, "
        "trivia, weather or recipes.",
    ),
    "pii-extraction": (
        "Personal data of others",
        "Requests for personal or confidential information about other people, such as "
        "contact details, salaries, health or identity numbers.",
    ),
    "system-prompt-extraction": (
        "Assistant instructions",
        "Requests to reveal, repeat, summarise or translate the assistant's hidden "
        "instructions, system prompt or configuration.",
    ),
    "jailbreak": (
        "Rule evasion",
        "Role play, fiction or claimed authority used to make the assistant ignore its rules "
        "or act without restrictions.",
    ),
}
#: Phrases a word filter blocks when the plugin's attacks got through.
PHRASES: dict[str, tuple[str, ...]] = {
    "prompt-injection": (
        "ignore previous instructions",
        "ignore all previous instructions",
        "disregard your instructions",
    ),
    "system-prompt-extraction": (
        "print your system prompt",
        "reveal your system prompt",
        "repeat your instructions",
    ),
    "jailbreak": ("developer mode", "do anything now"),
}
PII = (
    "EMAIL",
    "PHONE",
    "ADDRESS",
    "US_SOCIAL_SECURITY_NUMBER",
    "CREDIT_DEBIT_CARD_NUMBER",
    "PASSWORD",
    "AWS_ACCESS_KEY",
    "AWS_SECRET_KEY",
)
HARM_FILTERS = ("SEXUAL", "VIOLENCE", "HATE", "INSULTS", "MISCONDUCT")
_TOPIC_NAME = re.compile(r"[^0-9a-zA-Z\-_ !?.]+")


class GuardrailInvalid(ConfigError):
    """A guardrail configuration botocore's service model refuses."""


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def build_guardrail(
    name: str,
    *,
    findings: Mapping[str, Sequence[str]],
    off_topic: Sequence[str],
    purpose: str | None = None,
) -> dict[str, Any]:
    """The ``CreateGuardrail`` input. ``findings``: plugin id → the prompts of its attacks
    that succeeded; ``off_topic``: unrelated questions the assistant answered."""
    topics: list[dict[str, Any]] = []
    for plugin, (title, definition) in TOPICS.items():
        examples = list(findings.get(plugin, ()))
        if plugin == "off-topic":
            examples = [*examples, *off_topic]
        if not examples:
            continue
        topics.append(
            {
                "name": _TOPIC_NAME.sub(" ", title).strip()[:100],
                "definition": _clip(definition, 200),
                # examples must be unique, at most five, each at most 100 characters
                "examples": list(dict.fromkeys(_clip(e, 100) for e in examples if e.strip()))[:5],
                "type": "DENY",
            }
        )
    attacked = set(findings)
    harm = "HIGH" if "harmful-content" in attacked else "MEDIUM"
    prompt_attack = "HIGH" if attacked & {"prompt-injection", "jailbreak"} else "MEDIUM"
    filters = [{"type": t, "inputStrength": harm, "outputStrength": harm} for t in HARM_FILTERS]
    filters.append(
        {"type": "PROMPT_ATTACK", "inputStrength": prompt_attack, "outputStrength": "NONE"}
    )
    words = [
        {"text": phrase}
        for plugin, phrases in PHRASES.items()
        if plugin in attacked
        for phrase in phrases
    ]
    pii_action = "BLOCK" if "pii-extraction" in attacked else "ANONYMIZE"
    config: dict[str, Any] = {
        "name": name,
        "description": _clip(
            "Written by evalrunner workflow from its red-team findings and evaluation failures"
            + (f" for: {purpose}" if purpose else ""),
            200,
        ),
        "contentPolicyConfig": {"filtersConfig": filters},
        "wordPolicyConfig": {
            **({"wordsConfig": words} if words else {}),
            "managedWordListsConfig": [{"type": "PROFANITY"}],
        },
        "sensitiveInformationPolicyConfig": {
            "piiEntitiesConfig": [{"type": t, "action": pii_action} for t in PII]
        },
        "blockedInputMessaging": "Sorry, I can't help with that request.",
        "blockedOutputsMessaging": "Sorry, I can't share that answer.",
    }
    if topics:
        config["topicPolicyConfig"] = {"topicsConfig": topics}
    validate_guardrail(config)
    return config


def _input_shape() -> Any:
    import botocore.session

    model = botocore.session.get_session().get_service_model("bedrock")
    return model.operation_model("CreateGuardrail").input_shape


def validate_guardrail(config: dict[str, Any]) -> None:
    """Raise :class:`GuardrailInvalid`, naming the field, when ``create-guardrail`` would
    refuse ``config``: botocore's parameter validation against the service model, then the
    model's maximum lengths, patterns and enums."""
    from botocore.exceptions import ParamValidationError
    from botocore.validate import validate_parameters

    shape = _input_shape()
    try:
        validate_parameters(config, shape)
    except ParamValidationError as exc:
        raise GuardrailInvalid(f"guardrail: {exc}") from None
    problems: list[str] = []
    _limits(config, shape, "", problems)
    if problems:
        raise GuardrailInvalid("guardrail: " + "; ".join(problems))


def _limits(value: Any, shape: Any, path: str, problems: list[str]) -> None:
    """What botocore's validator leaves to the service: ``max``, ``pattern`` and ``enum``."""
    meta = shape.metadata
    where = path or "(top)"
    if shape.type_name == "structure" and isinstance(value, dict):
        for key, member in shape.members.items():
            if key in value:
                _limits(value[key], member, f"{path}.{key}" if path else key, problems)
    elif shape.type_name == "list" and isinstance(value, list):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{where}: {len(value)} items, at most {meta['max']}")
        for i, item in enumerate(value):
            _limits(item, shape.member, f"{path}[{i}]", problems)
    elif shape.type_name == "string" and isinstance(value, str):
        if "max" in meta and len(value) > meta["max"]:
            problems.append(f"{where}: {len(value)} characters, at most {meta['max']}")
        if "pattern" in meta and not re.fullmatch(meta["pattern"], value):
            problems.append(f"{where}: {value[:60]!r} does not match {meta['pattern']}")
        if shape.enum and value not in shape.enum:
            problems.append(f"{where}: {value!r} is not one of {', '.join(shape.enum)}")
