# ruff: noqa: I001  (registration order is deliberate: it is the order users see)
"""Imports every evaluator module so their ``@register`` decorators run.

The order here is the order of ``evalrunner metrics`` and of the default selection.
"""

from evalrunner.evaluators import (  # noqa: F401
    lexical,
    text_matching,
    leakage,
    encoding,
    json_schema,
    looping,
    language,
    classification,
    retrieval,
    refusal,
    judge_rag,
    judge_safety,
    judge_quality,
    semantic,
    bertscore,
    hallucination,
    toxicity,
    perplexity,
    summarization,
)
