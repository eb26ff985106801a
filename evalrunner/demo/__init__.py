"""The demo target: a small HR-policy RAG assistant that needs no AWS and no model.

evalrunner's first command evaluates it, so a new user sees a full run (passes, failures,
refusals, a regression via ``EVALRUNNER_DEMO_DEGRADED=1``) before pointing the tool at their
own agent.
"""

from evalrunner.demo.assistant import (
    INJECTION_REFUSAL,
    REFUSAL,
    SYSTEM_PROMPT,
    Answer,
    Citation,
    HRAssistant,
)

__all__ = ["INJECTION_REFUSAL", "REFUSAL", "SYSTEM_PROMPT", "Answer", "Citation", "HRAssistant"]
