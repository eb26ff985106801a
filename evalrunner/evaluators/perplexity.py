"""Perplexity of the answer under a small causal language model: a fluency signal that
needs no reference and no judge.

Perplexity = exp(mean token cross-entropy) of the answer (surrounding whitespace stripped)
after a beginning-of-text token, so every answer token is predicted and counted. Garbled
output (broken encodings, token soup, truncated JSON in prose) scores far higher than
ordinary text; fluent but wrong answers are not caught, and a looping answer scores *low*
(see ``Looping detection``). Lower is better.

Scores are batched with padding on the right and the padding masked out of the mean, so an
answer scores the same alone or next to a longer one; each distinct answer is scored once per
run. An answer longer than the model's context (1024 tokens for GPT-2 models) is scored on
its first tokens, and the reason says so. An empty answer has no tokens: its perplexity is
undefined and the case is skipped for this metric.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar

from evalrunner.evaluators.base import Input, MetricSpec, Sample, Scored, SkipCase
from evalrunner.evaluators.model_base import ModelEvaluator
from evalrunner.evaluators.registry import register
from evalrunner.models import ModelRole

#: Where this module's evaluators come in the catalog (see evaluators.registry).
CATALOG_POSITION = 180

#: GPT-2 small's zero-shot perplexity on edited English is in the tens (37.5 on WikiText-103
#: and 65.9 on Penn Treebank in the GPT-2 paper) and distilgpt2's is somewhat higher; garbled
#: text is in the hundreds to thousands. 100 passes ordinary prose and flags text the model
#: finds clearly unnatural. A very short answer ("Yes.") has little context to predict from and
#: can exceed it: raise the threshold for suites of one-word answers.
THRESHOLD = 100.0
#: Reports need a finite range. 1e6 is 13.8 nats per token, far above a uniform guess over
#: GPT-2's 50,257 tokens (10.8 nats, perplexity 50,257): no real answer reaches it.
HIGH = 1e6


@register
class Perplexity(ModelEvaluator):
    """Perplexity of the answer under a small causal LM (lower is more fluent).

    The example builds a language model that has learnt nothing (every weight 0), so it
    finds each of its 7 words equally likely: the perplexity of any text is then exactly the
    vocabulary size. A real model (distilgpt2 by default) gives fluent text a low value.

    >>> import tempfile, torch
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast
    >>> words = ["<|endoftext|>", "the", "cat", "sat", "on", "mat", "."]
    >>> vocab = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token=words[0]))
    >>> vocab.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    >>> folder = tempfile.mkdtemp()
    >>> _ = PreTrainedTokenizerFast(tokenizer_object=vocab, bos_token=words[0],
    ...                             eos_token=words[0]).save_pretrained(folder)
    >>> lm = GPT2LMHeadModel(GPT2Config(vocab_size=len(words), n_embd=8, n_layer=1, n_head=1,
    ...                                 bos_token_id=0, eos_token_id=0))
    >>> with torch.no_grad():  # all weights 0: a model that has learnt nothing
    ...     _ = [p.zero_() for p in lm.parameters()]
    >>> lm.save_pretrained(folder)
    >>> sample = Sample(question="Describe the picture.", answer="the cat sat on the mat .")
    >>> for r in Perplexity(options={"model": folder}).evaluate(sample):
    ...     print(f"{r.metric}: {r.score:.2f} {r.reason}")
    Perplexity: 7.00 perplexity 7.0 over 7 tokens (...)
    """

    name = "Perplexity"
    description = (
        "Perplexity (exp of the mean token cross-entropy) of the answer under a small causal "
        "language model (distilgpt2 by default); lower is more fluent."
    )
    inputs = frozenset({Input.ANSWER})
    role: ClassVar[ModelRole] = ModelRole.PERPLEXITY
    metrics = (
        MetricSpec(
            "Perplexity",
            "how surprising the answer's text is to a small language model",
            higher_is_better=False,
            threshold=THRESHOLD,
            low=1.0,
            high=HIGH,
            primary=True,
        ),
    )

    def score_batch(self, samples: Sequence[Sample]) -> list[Mapping[str, Scored] | Exception]:
        name = self.model_name()
        lm = self.hub.causal_lm(name)
        answers = [(s.answer or "").strip() for s in samples]
        texts = list(dict.fromkeys(a for a in answers if a))
        values = dict(zip(texts, lm.perplexity(texts), strict=True)) if texts else {}
        # Tokens per answer, for the reason (the tokenizer is fast; the model is not rerun).
        lengths = dict(zip(texts, _token_counts(lm.tokenizer, texts), strict=True))
        # The model sees max_length tokens, one of them the beginning-of-text token.
        room = lm.max_length - (1 if lm.tokenizer.bos_token else 0)
        out: list[Mapping[str, Scored] | Exception] = []
        for answer in answers:
            if not answer:
                out.append(SkipCase("the answer is empty: perplexity is undefined"))
                continue
            value = values[answer]
            if not math.isfinite(value):
                out.append(ValueError(f"language model {name!r} returned a perplexity of {value}"))
                continue
            tokens = lengths[answer]
            scored = f"{tokens} tokens"
            if tokens > room:
                scored = f"the first {room} of {tokens} tokens"
            reason = f"perplexity {value:.1f} over {scored} ({name})"
            out.append({self.name: Scored(value, reason)})
        return out


def _token_counts(tokenizer: object, texts: list[str]) -> list[int]:
    if not texts:
        return []
    encoded = tokenizer(texts, add_special_tokens=False, verbose=False)  # type: ignore[operator]
    return [len(ids) for ids in encoded["input_ids"]]
