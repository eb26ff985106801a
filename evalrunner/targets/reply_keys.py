"""The key names target replies use in the wild, by priority: where an answer, retrieved
chunks, documents, a tool, an intent and usage figures may live in a payload nobody designed
for evaluation. Read by :mod:`evalrunner.targets.adapters` (which finds them),
:mod:`evalrunner.targets.reply_contexts` and :mod:`evalrunner.targets.answer_hints`.
"""

from __future__ import annotations

#: Where an answer may live, by priority within one object.
ANSWER_KEYS = (
    "answer",
    "output",
    "response",
    "text",
    "completion",
    "result",
    "generated_text",
    "content",
    "message",
)
#: Keys whose dict value wraps the real record (``{"data": {"answer": ...}}``).
WRAPPER_KEYS = ("data", "body", "Payload", *ANSWER_KEYS)
#: Where retrieved chunks may live, by priority: the first key present wins.
CONTEXT_KEYS = (
    "contexts",
    "retrieved_contexts",
    "context",
    "citations",
    "sources",
    "source_documents",
    "retrievedReferences",
    "references",
)
DOCUMENT_KEYS = ("documents", "document_ids", "retrieved_documents", "doc_ids")
#: Fields of a context object holding its text / naming its document.
TEXT_FIELDS = ("text", "content", "page_content", "chunk", "snippet", "passage")
DOCUMENT_FIELDS = (
    "document",
    "source",
    "uri",
    "url",
    "location",
    "document_id",
    "doc_id",
    "title",
)
TOOL_KEYS = ("tool", "tool_name", "toolName", "tool_used", "tools", "tool_calls")
INTENT_KEYS = ("intent", "intent_name", "intentName", "detected_intent")
INPUT_TOKEN_KEYS = ("input_tokens", "prompt_tokens", "inputTokens", "promptTokens")
OUTPUT_TOKEN_KEYS = ("output_tokens", "completion_tokens", "outputTokens", "completionTokens")
COST_KEYS = ("cost", "cost_usd", "total_cost")
MAPPING_FIELDS = (
    "answer_path",
    "contexts_path",
    "documents_path",
    "tool_path",
    "intent_path",
    "steps_path",
)
