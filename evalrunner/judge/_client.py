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
import time
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from evalrunner.judge.base import (
    Judge,
    JudgeDeadlineError,
    JudgeError,
    JudgeParseError,
    JudgeReply,
    JudgeUsage,
    Message,
    record_case_usage,
)
from evalrunner.judge.cache import CachedReply, ResponseCache, SingleFlight, cache_key
from evalrunner.judge.config import JudgeConfig
from evalrunner.judge.limiter import AdaptiveLimiter, limiter_for
from evalrunner.judge.prompts import RESERVED_TAGS
from evalrunner.judge.reply_format import (
    looks_like_schema,
    repair_messages,
    reply_budget,
    with_reply_format,
)
from evalrunner.judge.structured import CapabilityMemory
from evalrunner.retry import (
    BACKOFF_BASE_SECONDS,
    BACKOFF_CAP_SECONDS,
    RETRY_AFTER_CAP_SECONDS,
    RetryPolicy,
    TransientError,
)

log = logging.getLogger("evalrunner.judge")

T = TypeVar("T", bound=BaseModel)


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
def top_level_values(text: str) -> list[tuple[str, Any]]:
    """Every complete top-level JSON object or array in ``text``, in order, as (source text,
    value): the whole text when it is one, else each value found by scanning, skipping past
    the end of each one found (a value nested inside another is part of it, not a value of its
    own). Values inside a ```json fence are found like any other."""
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except (ValueError, RecursionError):
        pass
    else:
        # The whole reply is one JSON value: the judge's own structure (what structured
        # output gives); a string inside it that looks like JSON is just a string.
        return [(stripped, whole)] if isinstance(whole, dict | list) else []
    decoder = json.JSONDecoder()
    found: list[tuple[str, Any]] = []
    match = _VALUE_START.search(stripped)
    while match is not None:
        start = match.start()
        try:
            value, end = decoder.raw_decode(stripped, start)
        except (ValueError, RecursionError):
            match = _VALUE_START.search(stripped, start + 1)
            continue
        found.append((stripped[start:end], value))
        match = _VALUE_START.search(stripped, end)
    return found


_VALUE_START = re.compile(r"[\[{]")
#: The prompt's data blocks (prompts.tagged / wrapped): an opening tag ends its line and a
#: closing tag starts one (a template may put text before or after them: "Rate: <answer>");
#: the same tags inside untrusted text have been neutralised, so these are the prompt's own.
_TAG_NAMES = "|".join(sorted(map(re.escape, RESERVED_TAGS), key=len, reverse=True))
_OPENS = re.compile(rf'<(?:{_TAG_NAMES})(?: id="\d+")?>\s*$')
_CLOSES = re.compile(rf"^\s*</(?:{_TAG_NAMES})>")
#: A placeholder of the prompt's example or reply instructions, as a JSON string: "<reason>",
#: "..." (a reply made of them repeats the example instead of filling it in).
_PLACEHOLDER = re.compile(r'"(<[^<>"\n]{1,80}>|\.\.\.|…)"')
#: A sentence of the instructions that a string of the reply may not contain whole.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
#: Shorter sentences are too common to tell a quote from a coincidence.
MIN_QUOTED_SENTENCE = 24


def _squash(text: str) -> str:
    return "".join(text.split())


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()


class PromptEvidence:
    """What a judge reply must not be made of, from the prompt it answers: the untrusted data
    (the tagged blocks: answers, contexts, questions, a quoted earlier reply), the placeholders
    of the reply example and instructions, and the instruction sentences.

    A reply that quotes the text under judgement before its verdict holds JSON the *answer*
    wrote (``{"score": 5}``); a small model may write the example's placeholders back
    (``{"statements": ["<statement>"]}``) or quote the instructions as statements. Neither is
    the judge's verdict.
    """

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        instructions: list[str] = []
        data: list[str] = []
        for message in messages:
            depth = 0
            for line in message.content.split("\n"):
                closes = _CLOSES.match(line)
                if closes is not None and depth > 0:
                    depth -= 1
                    line = line[closes.end() :]
                opens = _OPENS.search(line)
                if opens is not None:
                    (data if depth > 0 else instructions).append(line[: opens.start()])
                    depth += 1
                else:
                    (data if depth > 0 else instructions).append(line)
        told = "\n".join(instructions)
        self._data = "\n".join(data)
        data_plain = _plain(self._data)
        self.placeholders = frozenset(_PLACEHOLDER.findall(told))
        self.sentences = tuple(
            s
            for s in (_plain(part) for part in _SENTENCE_END.split(told))
            if len(s) >= MIN_QUOTED_SENTENCE and s not in data_plain
        )

    def quoted(self, source: str) -> bool:
        """Whether the JSON ``source`` is a copy of JSON in the untrusted data (white space
        aside): text the prompt quoted, not the judge's own verdict."""
        if source[:1] not in self._data:  # no JSON in the data at all: the common case
            return False
        squashed = _squash(source)
        return len(squashed) > 2 and squashed in self._squashed_data

    @cached_property
    def _squashed_data(self) -> str:
        return _squash(self._data)

    def echo(self, value: Any) -> str | None:
        """Why ``value`` repeats the prompt instead of answering it, or None. A reason may
        restate the rubric (it is shown, never judged or scored); any other string may not
        quote an instruction sentence."""
        for key, leaf in _strings(value):
            text = leaf.strip()
            if text in self.placeholders:
                return (
                    f"it repeats the placeholder {text!r} of the prompt's example instead of "
                    "giving a value of its own"
                )
            plain = _plain(text)
            if key not in _EXPLANATIONS and len(plain) >= MIN_QUOTED_SENTENCE:
                for sentence in self.sentences:
                    if sentence in plain:
                        return (
                            "it quotes the prompt's instructions "
                            f"({sentence[:60]!r}) instead of answering them"
                        )
        return None


#: Reply fields that explain a verdict: they may restate the rubric.
_EXPLANATIONS = frozenset({"reason", "reasons", "explanation"})


def _strings(value: Any) -> list[tuple[str, str]]:
    """Every string in a JSON value with the key it is under ("" in a top-level list)."""
    out: list[tuple[str, str]] = []
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        key, node = stack.pop()
        if isinstance(node, str):
            out.append((key, node))
        elif isinstance(node, dict):
            stack.extend((str(k), v) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((key, v) for v in node)
    return out


def _validation_summary(exc: ValidationError, limit: int = 5) -> str:
    parts = []
    for err in exc.errors()[:limit]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - limit
    if more > 0:
        parts.append(f"and {more} more")
    return "; ".join(parts)


def parse_reply(text: str, schema: type[T], prompt: PromptEvidence | None = None) -> T:
    """The judge's verdict in ``text`` as a validated ``schema`` instance. Raises InvalidReply.

    The verdict is the reply's LAST complete top-level JSON value (an object before a bare
    list) that validates as ``schema`` and is not a copy of JSON in the prompt's untrusted
    data (``prompt``): a judge that quotes the answer before its verdict quotes any JSON the
    answer planted, and the verdict comes after. A verdict made of the prompt's placeholders
    or quoting its instructions is refused, never taken for an answer."""
    evidence = prompt if prompt is not None else PromptEvidence()
    if not text.strip():
        raise InvalidReply("the reply was empty")
    values = top_level_values(text)
    if not values:
        raise InvalidReply("no JSON object found in the reply")
    first_error: InvalidReply | None = None
    copied = 0
    # Objects before bare lists (accepted for models that drop the wrapper): a verdict object
    # followed by a list of sources ("[1]", ["chunk 2"]) is still the object.
    latest_first = [v for v in reversed(values) if isinstance(v[1], dict)]
    latest_first += [v for v in reversed(values) if not isinstance(v[1], dict)]
    for source, value in latest_first:
        try:
            parsed = schema.model_validate(value)
        except ValidationError as exc:
            if first_error is None:
                first_error = _invalid(value, exc)
            continue
        if evidence.quoted(source):
            copied += 1
            continue
        echo = evidence.echo(value)
        if echo is not None:
            raise InvalidReply(echo)
        return parsed
    if copied:
        raise InvalidReply(
            "its only JSON that matches the reply format is copied from the text being "
            "judged, not a verdict of the judge's own"
        )
    assert first_error is not None
    raise first_error


def _invalid(value: Any, exc: ValidationError) -> InvalidReply:
    if looks_like_schema(value):  # what small models do when shown a schema document
        return InvalidReply(
            "it is a JSON Schema document, not an answer: give the values themselves"
        )
    return InvalidReply(f"it does not match the schema ({_validation_summary(exc)})")


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
        #: The cap on calls in flight; the limit itself adapts (:attr:`limiter`).
        self.max_concurrency = int(config.max_concurrency)
        self.cache = cache if config.cache else None
        self._flights = SingleFlight()
        self.max_tokens = int(config.max_tokens)
        #: Asks that failed in this run (this judge lives for one run and process), by cache
        #: key: the next metric that needs the same reply gets the same failure at no cost,
        #: so one bad reply costs one repair, not one per metric.
        self._failed: dict[str, JudgeError] = {}

    def capability_memory(self, *endpoint: str) -> CapabilityMemory | None:
        """Where this endpoint's structured-output mode is remembered across runs: the
        cache's persistent store (none without one)."""
        store = self.cache.persistent if self.cache is not None else None
        return CapabilityMemory(store, endpoint) if store is not None else None

    @cached_property
    def limiter(self) -> AdaptiveLimiter:
        """The process's concurrency limiter for this endpoint (shared with every judge of
        the same endpoint: every case of every run of this process waits for its slots)."""
        return limiter_for((type(self).__name__, self.endpoint), self.max_concurrency)

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
        evidence = PromptEvidence(with_reply_format(messages, schema))
        try:
            answer = self._answer(messages, schema, purpose, logprobs, usage, evidence)
            try:
                # A fresh instance per ask, even when the text was shared or cached.
                value = parse_reply(answer.text, schema, evidence)
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
        evidence: PromptEvidence,
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
            answer = self._lead(key, messages, schema, purpose, logprobs, usage, evidence)
        except BaseException as exc:
            if isinstance(exc, JudgeError) and not isinstance(exc, JudgeDeadlineError):
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
        evidence: PromptEvidence,
    ) -> _Answer:
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                try:
                    parse_reply(hit.text, schema, evidence)
                except InvalidReply:
                    self.cache.forget(key)  # e.g. written by an older parser: ask again
                else:
                    usage.cached += 1
                    return _Answer(hit.text, hit.top_logprobs, cached=True)
        with self._lock:  # after the cache: another process may have had better luck
            failed = self._failed.get(key)
        if failed is not None:
            raise self._again(failed, usage, remembered=True)
        answer = self._fresh(messages, schema, purpose, logprobs, usage, evidence)
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
        evidence: PromptEvidence,
    ) -> _Answer:
        """Ask; on output that does not validate, ask once more with a repair prompt that
        quotes the reply and what is wrong with it (with the whole ``max_tokens`` when the
        first reply was cut at its budget)."""
        prompt = with_reply_format(messages, schema)
        budget = reply_budget(schema, prompt, self.max_tokens)
        first = self._call(JudgeRequest(prompt, schema, budget, logprobs), purpose, usage)
        try:
            parse_reply(first.text, schema, evidence)
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
                parse_reply(second.text, schema, evidence)
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
        """One logical call: bounded attempts with backoff; each attempt holds a slot of the
        endpoint's adaptive limiter (the waits between them do not) and tells it how it went:
        an answer may widen the limit, a refusal or timeout narrows it."""
        clock = self.retry_policy().start()
        attempt = 0
        limiter = self.limiter
        last: TransientError | None = None
        while True:
            attempt += 1
            try:
                with limiter.slot() as permit:
                    self._in_time(purpose, last, attempt - 1)  # after any wait for a slot
                    usage.calls += attempt == 1
                    try:
                        completion = self._complete(request)
                    except TransientError as exc:
                        # The endpoint's other calls wait as long as this one will.
                        hold = exc.retry_after
                        if hold is not None:
                            hold = min(hold, self.retry_after_cap, self.timeout)
                        permit.overloaded(hold)
                        raise
                    permit.ok()
            except TransientError as exc:
                last, wait = exc, clock.next_wait(attempt, exc.retry_after)
                if wait is None:
                    raise self._gave_up(purpose, attempt, exc, clock.out_of_budget) from None
                self._in_time(purpose, exc, attempt, wait)
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

    def _in_time(
        self, purpose: str, last: TransientError | None, attempts: int, wait: float = 0.0
    ) -> None:
        """Raises :class:`JudgeDeadlineError` when an attempt started after ``wait`` could
        not end (``timeout`` later) before :attr:`deadline`: it is not made."""
        left = None if self.deadline is None else self.deadline - time.monotonic() - wait
        if left is None or left >= self.timeout:
            return
        why = (
            f"an attempt may take {self.timeout:g} s (judge.timeout_seconds) and {max(left, 0):.1f}"
            " s are left before this step's deadline"
        )
        if last is None:
            raise JudgeDeadlineError(f"{self.endpoint}: not asked for {purpose!r}: {why}")
        raise JudgeDeadlineError(
            f"{self.endpoint} failed for {purpose!r} after {attempts} attempt(s) and no retry "
            f"fits: {why}; last error: {str(last).rstrip('.')}"
        )

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
