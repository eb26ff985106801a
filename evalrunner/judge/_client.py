"""What every judge client shares: the reply format in the prompt, JSON extraction and
validation, the reply budget, the one repair attempt, retries, the run-wide concurrency limit,
the cache, the memory of failed asks and accounting.

A concrete client implements only :meth:`_BaseJudge._complete` (one attempt, one request) and
:attr:`_BaseJudge.endpoint` (how errors name it).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalrunner.judge.base import (
    Judge,
    JudgeError,
    JudgeParseError,
    JudgeReply,
    JudgeUsage,
    Message,
    record_case_usage,
)
from evalrunner.judge.cache import CachedReply, ResponseCache, SingleFlight, cache_key
from evalrunner.judge.config import JudgeConfig
from evalrunner.judge.reply_format import (
    looks_like_schema,
    repair_messages,
    reply_budget,
    with_reply_format,
)
from evalrunner.retry import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    RETRY_AFTER_CAP_SECONDS,
    RetryPolicy,
    TransientError,
)

log = logging.getLogger("evalrunner.judge")

T = TypeVar("T", bound=BaseModel)

#: How many '{' positions to try before giving up on finding an object in prose.
_MAX_OBJECT_STARTS = 64
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class JudgeRequest:
    """One request as a client sends it: the messages (reply format included), the schema
    the reply must validate as (for the server's structured output), and its budget."""

    messages: list[Message]
    schema: type[BaseModel]
    max_tokens: int
    logprobs: bool = False


@dataclass
class Completion:
    """One answered request: text, tokens, log-probabilities, extra requests it needed."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    top_logprobs: list[dict[str, float]] | None = None
    #: Requests beyond the first that this attempt made (e.g. resent without response_format).
    extra_requests: int = 0
    #: The reply stopped at its token budget (finish_reason "length", stopReason max_tokens).
    truncated: bool = False


class InvalidReply(ValueError):
    """The text holds no JSON object, or one that does not validate."""


# -- parsing ----------------------------------------------------------------------------------
def extract_json(text: str) -> Any:
    """The JSON object in ``text``: the whole text, a ```json fence, or the first balanced
    object inside prose. Raises InvalidReply."""
    stripped = text.strip()
    if not stripped:
        raise InvalidReply("the reply was empty")
    try:
        value = json.loads(stripped)
    except ValueError:
        pass
    else:
        if isinstance(value, dict):
            return value
    for match in _FENCE.finditer(stripped):
        try:
            value = json.loads(match.group(1).strip())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    start = stripped.find("{")
    tries = 0
    while start != -1 and tries < _MAX_OBJECT_STARTS:
        tries += 1
        try:
            value, _ = decoder.raw_decode(stripped, start)
        except ValueError:
            pass
        else:
            if isinstance(value, dict):
                return value
        start = stripped.find("{", start + 1)
    raise InvalidReply("no JSON object found in the reply")


def _validation_summary(exc: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def parse_reply(text: str, schema: type[T]) -> T:
    """``text`` as a validated ``schema`` instance. Raises InvalidReply."""
    value = extract_json(text)
    try:
        return schema.model_validate(value)
    except ValidationError as exc:
        if looks_like_schema(value):  # what small models do when shown a schema document
            raise InvalidReply(
                "it is a JSON Schema document, not an answer: give the values themselves"
            ) from exc
        raise InvalidReply(f"it does not match the schema ({_validation_summary(exc)})") from exc


@dataclass
class _Answer:
    text: str
    top_logprobs: list[dict[str, float]] | None
    cached: bool = False


# -- the client base --------------------------------------------------------------------------
class _BaseJudge(Judge):
    """Retries, concurrency limit, cache, repair and accounting around ``_complete``."""

    #: Backoff parameters (instances may be tuned, e.g. by tests).
    backoff_base: float = BACKOFF_BASE_SECONDS
    backoff_cap: float = BACKOFF_CAP_SECONDS
    retry_after_cap: float = RETRY_AFTER_CAP_SECONDS

    def __init__(self, config: JudgeConfig, *, cache: ResponseCache | None = None) -> None:
        super().__init__()
        self.config = config
        self.model = config.model_name
        self.timeout = float(config.timeout_seconds)
        self.max_retries = int(config.max_retries)
        self.max_concurrency = int(config.max_concurrency)
        #: Run-wide: every call of every case of this run waits for one of these slots.
        self._slots = threading.BoundedSemaphore(self.max_concurrency)
        self.cache = cache if config.cache else None
        self._flights = SingleFlight()
        self.max_tokens = int(config.max_tokens)
        #: Asks that failed in this run (this judge lives for one run and process), by cache
        #: key: the next metric that needs the same reply gets the same failure at no cost,
        #: so one bad reply costs one repair, not one per metric.
        self._failed: dict[str, JudgeError] = {}

    # -- for subclasses ------------------------------------------------------------------
    @property
    @abstractmethod
    def endpoint(self) -> str:
        """How errors name this judge, e.g. ``model gpt-4o at https://host/v1/...``."""

    @abstractmethod
    def _complete(self, request: JudgeRequest) -> Completion:
        """One attempt. Raises TransientError (worth retrying) or JudgeError (not)."""

    # -- the contract ----------------------------------------------------------------------
    def ask(
        self,
        messages: list[Message],
        schema: type[T],
        *,
        purpose: str,
        logprobs: bool = False,
    ) -> JudgeReply[T]:
        messages = [m if isinstance(m, Message) else Message.model_validate(m) for m in messages]
        usage = JudgeUsage()
        try:
            answer = self._answer(messages, schema, purpose, logprobs, usage)
            try:
                # A fresh instance per ask, even when the text was shared or cached.
                value = parse_reply(answer.text, schema)
            # Only when two schema classes share name and JSON schema but validate differently.
            except InvalidReply as exc:  # pragma: no cover
                usage.parse_failures += 1
                raise JudgeParseError(f"{self.endpoint}: {exc}", raw=answer.text) from exc
            return JudgeReply(
                value=value,
                usage=usage,
                cached=answer.cached,
                top_logprobs=answer.top_logprobs if logprobs else None,
            )
        finally:
            self._account(usage)
            record_case_usage(purpose, usage)

    def _answer(
        self,
        messages: list[Message],
        schema: type[BaseModel],
        purpose: str,
        logprobs: bool,
        usage: JudgeUsage,
    ) -> _Answer:
        """The validated reply text: from the cache, from an identical ask in flight, or
        from the judge. Fills ``usage``."""
        key = cache_key(self.model, messages, schema, logprobs)
        flight, leader = self._flights.join(key)
        if not leader:
            try:
                shared: _Answer = flight.result()
            except JudgeError as exc:
                raise self._again(exc, usage) from exc
            usage.cached += 1
            return _Answer(shared.text, shared.top_logprobs, cached=True)
        try:
            answer = self._lead(key, messages, schema, purpose, logprobs, usage)
        except BaseException as exc:
            if isinstance(exc, JudgeError):
                with self._lock:
                    self._failed.setdefault(key, exc)
            flight.set_exception(exc)
            raise
        else:
            flight.set_result(answer)
            return answer
        finally:
            self._flights.land(key)

    @staticmethod
    def _again(exc: JudgeError, usage: JudgeUsage, *, remembered: bool = False) -> JudgeError:
        """The same failure for another ask of the same key (no call made)."""
        note = (
            " (remembered from an earlier ask of this run; not asked again)" if remembered else ""
        )
        if isinstance(exc, JudgeParseError):
            usage.parse_failures += 1
            return JudgeParseError(exc.message + note, raw=exc.raw)
        return JudgeError(exc.message + note)

    def _lead(
        self,
        key: str,
        messages: list[Message],
        schema: type[BaseModel],
        purpose: str,
        logprobs: bool,
        usage: JudgeUsage,
    ) -> _Answer:
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    parse_reply(hit.text, schema)
                except InvalidReply:
                    self.cache.forget(key)  # e.g. written by an older parser: ask again
                else:
                    usage.cached += 1
                    return _Answer(hit.text, hit.top_logprobs, cached=True)
        with self._lock:  # after the cache: another process may have had better luck
            failed = self._failed.get(key)
        if failed is not None:
            raise self._again(failed, usage, remembered=True)
        answer = self._fresh(messages, schema, purpose, logprobs, usage)
        if self.cache is not None:
            self.cache.put(
                key,
                CachedReply(
                    text=answer.text,
                    input_tokens=usage.input_tokens,
                    output_tokens=usage.output_tokens,
                    top_logprobs=answer.top_logprobs,
                    model=self.model,
                ),
            )
        return answer

    def _fresh(
        self,
        messages: list[Message],
        schema: type[BaseModel],
        purpose: str,
        logprobs: bool,
        usage: JudgeUsage,
    ) -> _Answer:
        """Ask; on output that does not validate, ask once more with a repair prompt that
        quotes the reply and what is wrong with it (with the whole ``max_tokens`` when the
        first reply was cut at its budget)."""
        prompt = with_reply_format(messages, schema)
        budget = reply_budget(schema, prompt, self.max_tokens)
        first = self._call(JudgeRequest(prompt, schema, budget, logprobs), purpose, usage)
        try:
            parse_reply(first.text, schema)
        except InvalidReply as problem:
            error = str(problem)
            if first.truncated:
                error = f"it was cut off at the reply budget of {budget} tokens ({error})"
                budget = self.max_tokens
            log.info(
                "judge %s: %s reply did not validate (%s); repairing", self.model, purpose, error
            )
            repair = repair_messages(prompt, first.text, error, schema)
            second = self._call(JudgeRequest(repair, schema, budget, logprobs), purpose, usage)
            try:
                parse_reply(second.text, schema)
            except InvalidReply as again:
                usage.parse_failures += 1
                cut = (
                    f" (the reply was cut at {budget} tokens: raise judge.max_tokens)"
                    if second.truncated
                    else ""
                )
                raise JudgeParseError(
                    f"{self.endpoint} gave no valid {schema.__name__} for {purpose!r}, even "
                    f"after one repair prompt: {again}{cut}",
                    raw=second.text,
                ) from None
            return _Answer(second.text, second.top_logprobs)
        return _Answer(first.text, first.top_logprobs)

    def retry_policy(self) -> RetryPolicy:
        """The shared policy with this judge's settings. No explicit budget: the policy's
        default, (2 * max_retries + 1) * timeout_seconds, is what the attempts and capped
        waits can take at most, and now also a bound that is enforced."""
        return RetryPolicy(
            max_retries=self.max_retries,
            timeout=self.timeout,
            base=self.backoff_base,
            cap=self.backoff_cap,
            retry_after_cap=self.retry_after_cap,
        )

    def _call(self, request: JudgeRequest, purpose: str, usage: JudgeUsage) -> Completion:
        """One logical call: bounded attempts with backoff; each attempt holds a slot (the
        waits between them do not)."""
        clock = self.retry_policy().start()
        usage.calls += 1
        attempt = 0
        while True:
            attempt += 1
            try:
                with self._slots:
                    completion = self._complete(request)
            except TransientError as exc:
                wait = clock.next_wait(attempt, exc.retry_after)
                if wait is None:
                    raise self._gave_up(purpose, attempt, exc, clock.out_of_budget) from None
                usage.retries += 1
                log.info(
                    "judge %s: retry %d/%d for %s after %.2fs (%s)",
                    self.model,
                    attempt,
                    self.max_retries,
                    purpose,
                    wait,
                    exc,
                )
                if wait > 0:
                    time.sleep(wait)
                continue
            usage.retries += completion.extra_requests
            usage.input_tokens += completion.input_tokens
            usage.output_tokens += completion.output_tokens
            return completion

    def _gave_up(
        self, purpose: str, attempts: int, last: TransientError, out_of_budget: bool
    ) -> JudgeError:
        budget = (
            f" (no retry left within {self.retry_policy().budget:g} s)" if out_of_budget else ""
        )
        return JudgeError(
            f"{self.endpoint} failed for {purpose!r} after {attempts} attempt(s){budget}; last "
            f"error: {str(last).rstrip('.')}. Check that the judge is up and reachable; if it "
            "is only slow or rate-limited, raise judge.timeout_seconds or judge.max_retries, "
            "or lower judge.max_concurrency."
        )
