"""Conversation metrics: an LLM judge scores a whole conversation (``Sample.turns``) once,
on the conversation's record: Conversation relevancy, Conversation completeness, Knowledge
retention and Role adherence (:mod:`.metrics`; formulas and worked examples in
``docs/conversation_metrics.md``)."""

from evalrunner.evaluators.conversation import metrics as metrics

#: Where this package's evaluators come in the catalog (see evaluators.registry): after the
#: judge quality metrics.
CATALOG_POSITION = 135
