"""Batched, deduplicating wrappers around the loaded models.

Evaluation texts repeat a lot: the same expected answer over iterations, the same retrieved
chunk for many questions, the same answer sentences for five evaluators. Every wrapper here
keeps what it computed by text for the whole run, computes only texts it has not seen, and
feeds the model batches of similar length (sorted), so padding is small. Evaluators ask for
everything they need in one call per run; the wrappers do the rest.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)


@dataclass
class Counters:
    """How much work the cache saved: requested items against items the model computed."""

    requested: int = 0
    computed: int = 0
    batches: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"requested": self.requested, "computed": self.computed, "batches": self.batches}


def length_sorted_batches(
    keys: Sequence[K], size_of: Callable[[K], int], batch_size: int
) -> Iterator[list[K]]:
    """Batches of keys, longest first, so each batch pads to a similar length."""
    ordered = sorted(keys, key=size_of, reverse=True)
    for start in range(0, len(ordered), batch_size):
        yield ordered[start : start + batch_size]


@dataclass
class _Memo(Generic[K]):
    """Values by key, computed in length-sorted batches for the keys not seen yet."""

    compute: Callable[[list[Any]], np.ndarray]
    size_of: Callable[[Any], int]
    batch_size: int
    values: dict[Any, np.ndarray] = field(default_factory=dict)
    counters: Counters = field(default_factory=Counters)

    def get(self, keys: Sequence[Any], *, count: bool = True) -> list[np.ndarray]:
        if count:  # a prefetch plans work; only what evaluators read counts as requested
            self.counters.requested += len(keys)
        new = list(dict.fromkeys(k for k in keys if k not in self.values))
        for batch in length_sorted_batches(new, self.size_of, self.batch_size):
            out = self.compute(batch)
            self.counters.computed += len(batch)
            self.counters.batches += 1
            for key, value in zip(batch, out, strict=True):
                self.values[key] = value
        return [self.values[k] for k in keys]


class TextEncoder:
    """A bi-encoder (sentence-transformers): unit-length embeddings, so a dot product is the
    cosine similarity S(a, b) of EVALUATORS.md."""

    def __init__(self, model: Any, *, name: str, batch_size: int = 64) -> None:
        self.model, self.name = model, name
        self._memo: _Memo[str] = _Memo(self._encode, len, batch_size)

    def _encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(
            self.model.encode(
                texts,
                batch_size=len(texts),
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            ),
            dtype=np.float32,
        )

    @property
    def counters(self) -> Counters:
        return self._memo.counters

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows in the order given."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack(self._memo.get(list(texts)))

    def prefetch(self, texts: Iterable[str]) -> None:
        """Encode many texts at once (one sorted pass) before evaluators ask for them."""
        self._memo.get(list(texts), count=False)

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarity matrix (len(a), len(b))."""
        if not a or not b:
            return np.zeros((len(a), len(b)), dtype=np.float32)
        product: np.ndarray = self.embed(a) @ self.embed(b).T  # numpy types matmul as Any
        return product


class PairScorer:
    """A cross-encoder over (a, b) pairs. With one output it returns that score (the model's
    own activation, a sigmoid by default); with several, softmax probabilities by label."""

    def __init__(self, model: Any, *, name: str, batch_size: int = 32) -> None:
        self.model, self.name = model, name
        self.num_labels = int(getattr(model, "num_labels", 1))
        config = getattr(model, "config", None)
        id2label = getattr(config, "id2label", None) or {}
        self.labels = [str(id2label.get(i, i)).casefold() for i in range(self.num_labels)]
        self._memo: _Memo[tuple[str, str]] = _Memo(
            self._predict, lambda p: len(p[0]) + len(p[1]), batch_size
        )

    def _predict(self, pairs: list[tuple[str, str]]) -> np.ndarray:
        kwargs: dict[str, Any] = {"batch_size": len(pairs), "show_progress_bar": False}
        if self.num_labels > 1:
            kwargs["apply_softmax"] = True
        scores = np.asarray(self.model.predict(pairs, convert_to_numpy=True, **kwargs))
        return scores.reshape(len(pairs), -1).astype(np.float32)

    @property
    def counters(self) -> Counters:
        return self._memo.counters

    def scores(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """(len(pairs), num_labels) float32."""
        if not pairs:
            return np.zeros((0, self.num_labels), dtype=np.float32)
        return np.stack(self._memo.get(list(pairs)))

    def label_index(self, *names: str) -> int:
        """Index of the first label whose name starts with one of ``names`` (NLI models name
        theirs 'entailment', 'ENTAILMENT', 'entail', ...)."""
        for i, label in enumerate(self.labels):
            if label.startswith(tuple(n.casefold() for n in names)):
                return i
        raise ValueError(
            f"cross-encoder {self.name!r} has no label {'/'.join(names)} "
            f"(its labels: {', '.join(self.labels)}); configure an NLI model"
        )


class Classifier:
    """Detoxify-style multi-label classifier: one probability per class name and text."""

    def __init__(self, model: Any, *, name: str, batch_size: int = 32) -> None:
        self.model, self.name = model, name
        self.class_names: list[str] = list(model.class_names)
        self._memo: _Memo[str] = _Memo(self._predict, len, batch_size)

    def _predict(self, texts: list[str]) -> np.ndarray:
        out = self.model.predict(texts)
        columns = [np.atleast_1d(np.asarray(out[c], dtype=np.float32)) for c in self.class_names]
        return np.stack(columns, axis=1)

    @property
    def counters(self) -> Counters:
        return self._memo.counters

    def predict(self, texts: Sequence[str]) -> list[dict[str, float]]:
        rows = self._memo.get(list(texts))
        return [dict(zip(self.class_names, map(float, row), strict=True)) for row in rows]


class CausalLM:
    """A small causal language model scoring perplexity: exp(mean token cross-entropy)."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str, batch_size: int = 16) -> None:
        self.model, self.tokenizer, self.name = model, tokenizer, name
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "right"
        # GPT-2 style configs name the context length n_positions, most others
        # max_position_embeddings; 1024 when a config names neither
        config = model.config
        positions = (
            getattr(config, "n_positions", None)
            or getattr(config, "max_position_embeddings", None)
            or 1024
        )
        self.max_length = int(min(positions, 1024))
        self._memo: _Memo[str] = _Memo(self._perplexity, len, batch_size)

    def _perplexity(self, texts: list[str]) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        # A leading BOS lets the first real token be predicted (and scored) too.
        bos = self.tokenizer.bos_token or ""
        enc = self.tokenizer(
            [bos + t for t in texts],
            return_tensors="pt",
            padding=True,
            truncation=True,
            max_length=self.max_length,
        ).to(self.model.device)
        with torch.inference_mode():
            logits = self.model(**enc).logits.float()
        labels = enc["input_ids"][:, 1:]
        mask = enc["attention_mask"][:, 1:].float()
        nll = F.cross_entropy(logits[:, :-1].transpose(1, 2), labels, reduction="none")
        mean = (nll * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
        out = torch.exp(mean).cpu().numpy().astype(np.float64)
        out[mask.sum(dim=1).cpu().numpy() == 0] = math.nan  # nothing to predict
        return out

    @property
    def counters(self) -> Counters:
        return self._memo.counters

    def perplexity(self, texts: Sequence[str]) -> list[float]:
        return [float(v) for v in self._memo.get(list(texts))]


class BertScore:
    """BERTScore (the bert-score library) of candidates against references."""

    def __init__(self, scorer: Any, *, name: str) -> None:
        self.scorer, self.name = scorer, name
        self.counters = Counters()

    def score(
        self, candidates: Sequence[str], references: Sequence[str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Precision, recall and F1 arrays (bert-score dedups and length-sorts internally)."""
        self.counters.requested += len(candidates)
        self.counters.computed += len(candidates)
        self.counters.batches += 1
        p, r, f = self.scorer.score(list(candidates), list(references), verbose=False)
        return p.numpy(), r.numpy(), f.numpy()
