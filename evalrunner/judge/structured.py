"""Which structured-output parameter a judge sends, detected per endpoint and remembered.

Servers differ: OpenAI, vLLM, llama.cpp's ``llama-server`` and Ollama (its ``/v1`` endpoint
turns ``response_format`` ``json_schema`` into its own ``format``) follow
``response_format={"type": "json_schema", ...}``; llama-cpp-python's server knows only
``{"type": "json_object", "schema": ...}`` and answers anything else with HTTP 500; older
vLLM reads ``guided_json``; Bedrock models take a tool whose input schema is the reply's.

With ``structured_output: auto`` a judge starts at the first mode of its chain and steps to
the next when the server rejects it: HTTP 400/422 naming the parameter, or an HTTP 500 to
the first mode before it has ever worked (llama-cpp-python's 500 need not name anything).
The step is taken once for the whole run (the judge lives for one run and process) and
logged; a mode that has worked once is kept, so a later 500 is an ordinary server error,
retried as such. A mode set explicitly is never changed: its rejection is an error that says
what to set instead.

What a step learned is remembered across runs (:class:`CapabilityMemory`): the mode that
answered, per endpoint (kind, URL or region, model), in the judge cache's persistent store
(locally the user's cache folder beside the cached replies; deployed, the bucket's
``judge-cache/``), for :data:`MEMORY_SECONDS`. The next run starts from it instead of
sending a request the server is known to refuse. Without a persistent cache (``cache:
false``) nothing is remembered.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from typing import Any, Protocol

log = logging.getLogger("evalrunner.judge")

#: Tried in this order by ``auto``.
OPENAI_CHAIN = ("json_schema", "json_object", "json_mode", "none")
BEDROCK_CHAIN = ("tool_use", "tool_use_any", "none")
#: Words in an error body that show the server objected to the structured-output parameter.
REJECTION_WORDS = (
    "response_format",
    "json_schema",
    "json_object",
    "schema",
    "guided_json",
    "grammar",
    "toolchoice",
    "tool_choice",
    "tool use",
    "tool_use",
    "toolconfig",
)


#: How long a learned mode is trusted: a server upgraded to support json_schema is asked
#: again after this (a month).
MEMORY_SECONDS = 30 * 24 * 3600


class _Store(Protocol):
    """What :class:`CapabilityMemory` needs of a cache store (``judge.cache.CacheStore``)."""

    def load(self, key: str) -> dict[str, Any] | None: ...

    def save(self, key: str, value: dict[str, Any]) -> None: ...


class CapabilityMemory:
    """The structured-output mode one endpoint answered, kept in ``store`` across runs.

    A broken store is no memory (logged at debug level), never a failed judgement."""

    def __init__(self, store: _Store, endpoint: tuple[str, ...]) -> None:
        self.store = store
        digest = hashlib.sha256(json.dumps(list(endpoint)).encode("utf-8")).hexdigest()
        self.key = f"endpoint-{digest}"
        self.endpoint = endpoint

    def recall(self, chain: tuple[str, ...], now: float | None = None) -> str | None:
        """The remembered mode, when it is one of ``chain`` and not older than
        :data:`MEMORY_SECONDS`; else None."""
        try:
            entry = self.store.load(self.key)
        except Exception as exc:
            log.debug("structured-output memory: cannot read %s: %s", self.key, exc)
            return None
        if not entry:
            return None
        mode, learned = entry.get("structured_output"), entry.get("learned_at")
        if mode not in chain or not isinstance(learned, int | float):
            return None
        if (time.time() if now is None else now) - learned > MEMORY_SECONDS:
            return None
        return str(mode)

    def remember(self, mode: str) -> None:
        value = {
            "structured_output": mode,
            "learned_at": time.time(),
            "endpoint": "/".join(self.endpoint),
        }
        try:
            self.store.save(self.key, value)
        except Exception as exc:
            log.debug("structured-output memory: cannot write %s: %s", self.key, exc)


class OutputMode:
    """The structured-output mode of one judge: detected (``auto``) or fixed. Thread-safe.

    With ``memory``, ``auto`` starts from the mode an earlier run found (when there is one)
    and remembers the mode it steps to once that mode has answered."""

    def __init__(
        self, configured: str, chain: tuple[str, ...], memory: CapabilityMemory | None = None
    ) -> None:
        self.configured = configured
        self.auto = configured == "auto"
        self.chain = chain
        self._mode = chain[0] if self.auto else configured
        self._confirmed: set[str] = set()
        self._lock = threading.Lock()
        #: What happened, for the log and for tests: ``(from, to, why)`` per step taken.
        self.steps: list[tuple[str, str, str]] = []
        self.memory = memory if self.auto else None
        #: The mode an earlier run learned, when this one started from it.
        self.recalled: str | None = None
        if self.memory is not None:
            self.recalled = self.memory.recall(chain)
            if self.recalled is not None:
                self._mode = self.recalled
                log.info(
                    "structured output %r, learned by an earlier run for this endpoint",
                    self.recalled,
                )
        self._remembered = self.recalled

    @property
    def current(self) -> str:
        with self._lock:
            return self._mode

    def confirm(self, mode: str) -> None:
        """``mode`` produced a reply: keep it (a later 500 is the server's, not the mode's),
        and remember it for the next run when it was stepped to."""
        with self._lock:
            self._confirmed.add(mode)
            learn = self.memory is not None and self.steps and self._remembered != mode
            if learn:
                self._remembered = mode
        if learn and self.memory is not None:
            self.memory.remember(mode)

    def unproven_hint(self, mode: str) -> str:
        """A hint for a server error to a request sent with ``mode``, set explicitly and never
        seen working: the server may not support it (llama-cpp-python answers 500)."""
        with self._lock:
            unproven = mode not in self._confirmed
        if self.auto or mode == "none" or not unproven:
            return ""
        return (
            f" (if the server does not support judge.structured_output {mode!r}, set it to "
            "'auto', which detects what the server supports)"
        )

    def is_rejection(self, mode: str, status: int, body: str) -> bool:
        """Whether ``status``/``body`` answering a request sent with ``mode`` rejects it."""
        if mode == "none" or status not in (400, 422, 500):
            return False
        text = body.lower()
        named = any(word in text for word in REJECTION_WORDS)
        with self._lock:
            unproven = mode not in self._confirmed
        if status == 500:
            # llama-cpp-python's answer to a response_format type it does not know. Only the
            # first mode is stepped from on a bare 500: a server that fails every request
            # costs one extra request per run, not one per mode.
            return unproven and self.auto and mode == self.chain[0]
        return named

    def step(self, mode: str, why: str, endpoint: str) -> str | None:
        """After a rejection of ``mode``: the mode to resend with (the next of the chain, or
        the current one when another request already stepped), None when fixed or at the end."""
        if not self.auto:
            return None
        with self._lock:
            if self._mode != mode:
                return self._mode
            at = self.chain.index(mode) if mode in self.chain else len(self.chain) - 1
            if at + 1 >= len(self.chain):
                return None
            self._mode = self.chain[at + 1]
            self.steps.append((mode, self._mode, why))
            new = self._mode
        log.warning(
            "%s rejected structured output %r (%s); using %r for the rest of this run",
            endpoint,
            mode,
            why,
            new,
        )
        return new
