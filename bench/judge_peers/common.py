"""What every side of the judge-call benchmark shares: the token estimator, the call ledger,
the fake judge's answer filler and the network guard.

This module must import in both interpreters (the project venv and the peers venv), so it
depends on the standard library and pydantic only.

The fake judge is the same for all three tools:
- tokens are *estimated* as len(text) / 4, for the prompt (every message's content) and for
  the completion (the compact JSON of the answer), never taken from a tokenizer;
- an extraction (statements, claims, truths) always yields ``STATEMENTS_PER_TEXT`` items per
  text it splits (the answer, the expected answer, or each context chunk);
- a verdict list has one verdict per item it judges (a statement, a claim or a chunk);
- strings have fixed, realistic lengths (see ``STATEMENT``, ``REASON``, ``QUESTION``).
"""

from __future__ import annotations

import enum
import json
import os
import socket
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

HERE = Path(__file__).resolve().parent
#: The cases every side reads; the harness may point all three at another file.
CASES_FILE = Path(os.environ.get("BENCH_JUDGE_CASES") or HERE / "rag_cases.json")

STATEMENTS_PER_TEXT = 3
#: ~60 characters, about a 10-word atomic statement
STATEMENT = "Statement {i}: employees get this benefit under the policy."
#: ~60 characters, a one-sentence justification
REASON = "The statement is supported by the retrieval context given."
QUESTION = "How many days of paid annual leave do employees receive?"
FIVE = (
    "Faithfulness",
    "Answer Relevancy",
    "Contextual Precision",
    "Contextual Recall",
    "Contextual Relevancy",
)


def est_tokens(text: str) -> float:
    """The one token estimator used for every tool: characters / 4."""
    return len(text) / 4


def load_cases() -> list[dict[str, Any]]:
    return json.loads(CASES_FILE.read_text(encoding="utf-8"))["cases"]


# --- the ledger -------------------------------------------------------------------------


@dataclass
class Call:
    metric: str
    case_id: str
    purpose: str
    input_tokens: float
    output_tokens: float
    cached: bool = False
    #: the requested schema, for a tool whose own client sends it beside the prompt
    schema_tokens: float = 0.0


@dataclass
class Ledger:
    """Every judge call made, tagged with the metric and case being scored."""

    calls: list[Call] = field(default_factory=list)
    embedding_calls: list[tuple[str, str, float]] = field(default_factory=list)
    metric: str = ""
    case_id: str = ""
    case: dict[str, Any] | None = None

    def record(
        self,
        purpose: str,
        prompt: str,
        completion: str,
        *,
        cached: bool = False,
        schema: type[BaseModel] | None = None,
    ) -> None:
        """One judge call. ``schema``: the model a peer asked for; its native clients send it
        beside the prompt (DeepEval's OpenAI model as response_format, Ragas' instructor
        client in a system message), which the prompt text alone does not show."""
        dump_to = os.environ.get("BENCH_JUDGE_DUMP")
        if dump_to:  # every prompt and completion, for reading what each tool sends
            with open(dump_to, "a", encoding="utf-8") as fh:
                row = {
                    "metric": self.metric,
                    "case": self.case_id,
                    "purpose": purpose,
                    "cached": cached,
                    "prompt": prompt,
                    "completion": completion,
                }
                fh.write(json.dumps(row) + "\n")
        self.calls.append(
            Call(
                self.metric,
                self.case_id,
                purpose,
                0.0 if cached else est_tokens(prompt),
                0.0 if cached else est_tokens(completion),
                cached,
                0.0 if cached or schema is None else est_tokens(schema_json(schema)),
            )
        )

    def record_embedding(self, texts: list[str]) -> None:
        for text in texts:
            self.embedding_calls.append((self.metric, self.case_id, est_tokens(text)))

    def summary(self, n_cases: int) -> dict[str, Any]:
        """Per metric and in total: calls, cached calls and estimated tokens per case."""
        out: dict[str, Any] = {"per_metric": {}, "purposes": {}}
        metrics = list(dict.fromkeys(c.metric for c in self.calls))
        for metric in [*metrics, "TOTAL"]:
            rows = [c for c in self.calls if metric in ("TOTAL", c.metric)]
            paid = [c for c in rows if not c.cached]
            emb = [e for e in self.embedding_calls if metric in ("TOTAL", e[0])]
            out["per_metric"][metric] = {
                "calls": len(paid) / n_cases,
                "cached_calls": (len(rows) - len(paid)) / n_cases,
                "input_tokens": sum(c.input_tokens for c in paid) / n_cases,
                "output_tokens": sum(c.output_tokens for c in paid) / n_cases,
                "total_tokens": sum(c.input_tokens + c.output_tokens for c in paid) / n_cases,
                "schema_tokens": sum(c.schema_tokens for c in paid) / n_cases,
                "embedding_texts": len(emb) / n_cases,
                "embedding_tokens": sum(e[2] for e in emb) / n_cases,
            }
        for c in self.calls:
            key = f"{c.metric} / {c.purpose}" + (" (cached)" if c.cached else "")
            out["purposes"][key] = out["purposes"].get(key, 0) + 1 / n_cases
        return out


LEDGER = Ledger()


# --- the answer filler --------------------------------------------------------------------


def statements(n: int) -> list[str]:
    return [STATEMENT.format(i=i + 1) for i in range(n)]


def _unwrap_optional(annotation: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        if len(args) == 1:
            return args[0], optional
        return args[0], optional
    return annotation, False


def _scalar(name: str, annotation: Any, index: int) -> Any:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        values = typing.get_args(annotation)
        for preferred in ("yes", "Yes", "supported", "relevant", True, 1):
            if preferred in values:
                return preferred
        return values[0]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        for member in annotation:
            if str(member.value).lower() in ("yes", "supported", "relevant"):
                return member
        return next(iter(annotation))
    lname = name.lower()
    if annotation is bool:
        return True
    if annotation is int:
        if "noncommittal" in lname:
            return 0
        if "rating" in lname:
            return 2
        if "score" in lname:
            return 5
        return 1  # verdict, attributed, ...
    if annotation is float:
        return 1.0
    if annotation is str:
        if "reason" in lname or "explanation" in lname or "justification" in lname:
            return REASON
        if "question" in lname:
            return QUESTION
        if "verdict" in lname:
            return "yes"
        if lname in ("statement", "claim", "truth", "text", "sentence"):
            return STATEMENT.format(i=index + 1)
        return STATEMENT.format(i=index + 1)
    return None


def fill(
    model: type[BaseModel],
    count: int,
    *,
    counts: dict[str, int] | None = None,
    optional_reasons: bool = False,
    index: int = 0,
):
    """An instance of ``model`` as a compliant judge would write it: every list has ``count``
    items (``counts[field]`` for a top-level field named there), every verdict is the
    favourable one. Optional fields are left out (None) unless ``optional_reasons``: DeepEval's
    prompts ask for a reason only on a negative verdict, and that is where it makes them
    Optional."""
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        annotation, optional = _unwrap_optional(info.annotation)
        if optional and not optional_reasons:
            values[name] = None
            continue
        n = (counts or {}).get(name, count)
        values[name] = _value(name, annotation, n, count, optional_reasons, index)
    return model(**values)


def _value(
    name: str, annotation: Any, n: int, count: int, optional_reasons: bool, index: int
) -> Any:
    """``n`` items for a list here; ``count`` for the lists of nested models."""
    origin = typing.get_origin(annotation)
    if origin in (list, tuple):
        (item,) = typing.get_args(annotation)[:1] or (str,)
        item, _ = _unwrap_optional(item)
        if isinstance(item, type) and issubclass(item, BaseModel):
            return [fill(item, count, optional_reasons=optional_reasons, index=i) for i in range(n)]
        return [_scalar(name.rstrip("s"), item, i) for i in range(n)]
    if origin is dict:
        return {}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return fill(annotation, count, optional_reasons=optional_reasons, index=index)
    return _scalar(name, annotation, index)


def schema_json(schema: type[BaseModel]) -> str:
    return json.dumps(schema.model_json_schema(), separators=(",", ":"), ensure_ascii=False)


def dump(value: BaseModel) -> str:
    """The completion as the judge would have sent it: compact JSON."""
    return value.model_dump_json(exclude_none=True)


# --- the case-aware counts ----------------------------------------------------------------


def chunks_in(prompt: str, case: dict[str, Any]) -> int:
    """How many of the case's retrieved chunks appear in the prompt (at least 1)."""
    return max(1, sum(1 for chunk in case["contexts"] if chunk[:80] in prompt))


# --- the network guard --------------------------------------------------------------------

CONNECT_ATTEMPTS: list[str] = []


def install_socket_guard() -> None:
    """Refuse (and record) every attempt to open a network connection. The harness also runs
    each side in a fresh network namespace (``unshare -n``) where it can."""

    def refuse(kind: str) -> Callable[..., Any]:
        def _refuse(*args: Any, **kwargs: Any) -> Any:
            target = args[1] if len(args) > 1 else args[0] if args else kwargs
            CONNECT_ATTEMPTS.append(f"{kind} {target!r}"[:200])
            raise OSError(f"benchmark: network access refused ({kind})")

        return _refuse

    socket.socket.connect = refuse("connect")  # type: ignore[method-assign]
    socket.socket.connect_ex = refuse("connect_ex")  # type: ignore[method-assign]
    socket.create_connection = refuse("create_connection")  # type: ignore[assignment]
    socket.getaddrinfo = refuse("getaddrinfo")  # type: ignore[assignment]


def emit(result: dict[str, Any]) -> None:
    """Print the side's result as the last line of stdout, for the harness to read."""
    result["network_attempts"] = CONNECT_ATTEMPTS[:20]
    result["network_attempt_count"] = len(CONNECT_ATTEMPTS)
    sys.stdout.write("\nRESULT " + json.dumps(result) + "\n")
    sys.stdout.flush()
