"""Keep secrets out of everything the runner writes: reports, case records, errors and logs.

Two complementary nets, both applied at a few chokepoints rather than at every call site:

- **By value.** Every secret the runner reads (see :mod:`evalrunner.secrets`) and every value
  it sends to a target or judge that may be a credential, whatever it is called (every header
  value but the plain ones such as ``Content-Type``, every query parameter value, a URL's user
  info, body values under credential-like keys: :class:`~evalrunner.http_client.JsonHttpClient`
  registers them on every request) is *registered* in a process-wide set. :func:`redact`
  replaces each registered value with ``***`` wherever it appears, in any case and in the
  spellings an echoing server may use (escaped, base64, a Basic credential decoded): in an
  answer that echoes a header, in an error body, in a traceback. A value shorter than
  WORD_SAFE_LENGTH is masked only where it stands as a word of its own. The chokepoints
  are :class:`~evalrunner.storage.RunStore` (every object the run writes),
  :class:`~evalrunner.errors.EvalRunnerError` (every message shown to a user) and the log
  record factory installed by :func:`install_log_redaction`.
- **By name.** :func:`mask_config` shows a configuration (the event's target, headers, URLs)
  with the values of sensitive headers, URL user info and sensitive query parameters masked,
  whether or not they were registered.

This module has no dependency inside evalrunner, so the error hierarchy and storage can use it.
"""

from __future__ import annotations

import base64
import binascii
import html
import json
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

MASK = "***"
#: Values shorter than this are not registered: masking "1" or "on" everywhere would wreck
#: the reports and protect nothing (such a value is not a secret).
MIN_SECRET_LENGTH = 4
#: Values (and spellings) at least this long are masked wherever they appear; shorter ones
#: only where they stand as a word of their own, so masking stays small.
WORD_SAFE_LENGTH = 8
#: Headers the runner sends whose values describe the request and carry no credential; every
#: other header's value is masked by value, whatever the header is called.
PLAIN_HEADERS = frozenset(
    {
        "accept",
        "accept-encoding",
        "accept-language",
        "cache-control",
        "connection",
        "content-length",
        "content-type",
        "host",
        "user-agent",
    }
)
#: Short values that are words of every report (a CSV's ``true``), not credentials: a header
#: or query value like these is not registered (a secret read as one is, whatever it is).
_PLAIN_VALUE = re.compile(r"^(?:true|false|null|none|yes|no|-?\d+(?:\.\d+)?)$", re.I)

#: A header (or any mapping key) whose value is a credential.
SENSITIVE_NAME = re.compile(
    r"key|token|secret|auth|signature|password|passwd|cookie|credential|session", re.I
)
#: A body key whose string value is a credential. Narrower than SENSITIVE_NAME: a body also
#: carries a conversation's ``sessionId``, which changes per conversation and is no secret.
BODY_CREDENTIAL = re.compile(r"key|token|secret|password|passwd|credential|auth", re.I)
#: Query parameters that carry credentials (matched case-insensitively, whole name).
SENSITIVE_QUERY = frozenset(
    {
        "api_key",
        "apikey",
        "api-key",
        "key",
        "token",
        "access_token",
        "id_token",
        "refresh_token",
        "sig",
        "signature",
        "code",
        "password",
        "secret",
        "client_secret",
        "x-amz-signature",
        "x-amz-security-token",
        "x-amz-credential",
    }
)

_lock = threading.Lock()
_values: set[str] = set()
_pattern: _Matcher | None = None


def _forms(value: str) -> set[str]:
    """The spellings of ``value`` that a report, a log or an echoing server may hold: as is,
    JSON-, HTML- and URL-escaped, and base64 (standard and URL-safe, padded or not): a target
    that echoes a credential it decoded or encoded. A different case is matched too (the
    pattern ignores case)."""
    forms = {value, value.strip(), json.dumps(value)[1:-1], html.escape(value), quote(value)}
    forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
    raw = value.encode("utf-8")
    for encoded in (base64.b64encode(raw), base64.urlsafe_b64encode(raw)):
        text = encoded.decode("ascii")
        forms.update({text, text.rstrip("=")})
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


class _Matcher:
    """The registered forms as one pattern over lower-cased text: matching the lower-cased
    text with a case-sensitive pattern is as fast as a plain search (an IGNORECASE pattern
    of many alternatives is 20 times slower); text whose lower-case form changes length
    (a few Unicode letters) uses the IGNORECASE pattern, built on first need."""

    def __init__(self, forms: set[str]) -> None:
        # Longest first, so a secret that contains another is masked whole.
        self.alternatives = sorted({f.lower() for f in forms}, key=len, reverse=True)
        self.lowered = re.compile("|".join(map(re.escape, self.alternatives)))
        self._any_case: re.Pattern[str] | None = None

    def pattern_for(self, text: str) -> tuple[re.Pattern[str], str]:
        lowered = text.lower()
        if len(lowered) == len(text):
            return self.lowered, lowered
        if self._any_case is None:
            self._any_case = re.compile(self.lowered.pattern, re.IGNORECASE)
        return self._any_case, text

    def sub(self, text: str) -> str:
        pattern, haystack = self.pattern_for(text)
        out: list[str] = []
        last = position = 0
        while True:
            match = pattern.search(haystack, position)
            if match is None:
                break
            start, end = match.span()
            if end - start < WORD_SAFE_LENGTH and not _stands_alone(text, start, end):
                position = start + 1  # inside a word: not this one, maybe one starting later
                continue
            out += (text[last:start], MASK)
            last = position = end
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def _stands_alone(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a word of its own: not inside a word, a file name or a
    path (a short value is not masked there: "json" stays in "summary.json", "plan" in
    "explanation"); a sentence's full stop after it is fine."""
    if start > 0:
        before = text[start - 1]
        if _word_char(before) or before in "./-":
            return False
    if end < len(text):
        after = text[end]
        if _word_char(after) or after in "/-":
            return False
        if after == "." and end + 1 < len(text) and _word_char(text[end + 1]):
            return False
    return True


def register(value: str | None) -> None:
    """Add ``value`` to the set redacted everywhere in this process (short values ignored),
    in every spelling of :func:`_forms`."""
    global _pattern
    if not value or len(value) < MIN_SECRET_LENGTH:
        return
    forms = _forms(value)
    with _lock:
        if forms <= _values:
            return
        _values.update(forms)
        _pattern = _Matcher(_values)
    install_log_redaction()


def registered() -> frozenset[str]:
    """The values being redacted (for tests and diagnostics; never print them)."""
    with _lock:
        return frozenset(_values)


def forget_all() -> None:
    """Empty the set (tests only: a real process keeps its secrets masked until it ends)."""
    global _pattern
    with _lock:
        _values.clear()
        _pattern = None


def redact(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    matcher = _pattern
    if matcher is None or not text:
        return text
    return matcher.sub(text)


def redact_value(value: Any) -> Any:
    """``redact`` applied to every string inside a JSON-like value (keys included)."""
    if _pattern is None:
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {redact_value(k): redact_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v) for v in value]
    return value


def redact_bytes(data: bytes) -> bytes:
    """``redact`` for UTF-8 text bytes (CSV, HTML, JSON); other bytes are returned as they are."""
    if _pattern is None:
        return data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return data
    cleaned = redact(text)
    return data if cleaned == text else cleaned.encode("utf-8")


# -- by name -----------------------------------------------------------------------------------


def mask_url(url: str) -> str:
    """``https://user:pw@host/p?api_key=K&q=1`` → ``https://***@host/p?api_key=***&q=1``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        masked = [(k, MASK if k.lower() in SENSITIVE_QUERY else v) for k, v in pairs]
        query = urlencode(masked, safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The credential parts of a URL: user info and the value of every query parameter,
    whatever it is called (``access_key=`` is as secret as ``api_key=``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return []
    found = [v for v in (parts.username, parts.password) if v]
    found += [v for _, v in parse_qsl(parts.query, keep_blank_values=True) if v]
    return found


def _register_sent(value: str) -> None:
    """Register a value the runner sends (header, query, body): short plain words and
    numbers excepted (masking every ``true`` of a report would protect nothing)."""
    if len(value) < WORD_SAFE_LENGTH and _PLAIN_VALUE.match(value.strip()):
        return
    register(value)


def register_url(url: str) -> None:
    """Register the credential parts of ``url`` so an echo of them is masked too."""
    for value in url_secrets(url):
        _register_sent(value)


def register_headers(headers: Mapping[str, str]) -> None:
    """Register the value of every header sent (but the plain ones: ``Content-Type``...),
    whatever it is called (``X-Pass``, ``X-Api``), with the credential of an auth scheme
    alone (``Bearer TOKEN``: TOKEN) and a Basic credential decoded (``user:pass``, ``user``
    and ``pass``), since a target may echo any of them."""
    for name, value in headers.items():
        if not isinstance(value, str) or str(name).strip().lower() in PLAIN_HEADERS:
            continue
        _register_sent(value)
        scheme, _, credential = value.strip().partition(" ")
        if not credential.strip():
            continue
        _register_sent(credential.strip())
        if scheme.lower() == "basic":
            for part in _basic_parts(credential.strip()):
                _register_sent(part)


def _basic_parts(credential: str) -> list[str]:
    """``base64("user:pass")`` → ``["user:pass", "user", "pass"]`` (nothing if not base64)."""
    try:
        decoded = base64.b64decode(credential + "=" * (-len(credential) % 4), validate=True)
        text = decoded.decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return []
    user, _, password = text.partition(":")
    return [p for p in (text, user, password) if p]


def register_body(payload: Any) -> None:
    """Register credentials in a JSON body the runner sends: the string values of keys named
    like a credential (``api_key``, ``password``, ``token``; BODY_CREDENTIAL), at any depth."""
    stack = [payload]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if isinstance(value, str) and BODY_CREDENTIAL.search(str(key)):
                    _register_sent(value)
                elif isinstance(value, dict | list):
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)


def register_event(event: Any) -> None:
    """Register every credential an event carries literally (URL user info and sensitive
    query values of its target and judge URLs, sensitive header values), as soon as the
    event is seen, so the logs of its own start (the execution input) are masked too."""
    if not isinstance(event, dict):
        return
    for spec in (event.get("target"), event.get("judge")):
        _register_spec(spec, depth=0)


def _register_spec(value: Any, depth: int) -> None:
    """Every URL (an ``url``, a ``base_url``, an Azure ``endpoint``, ...) and every
    ``headers`` table at any depth of a target's or judge's spec: the walk names no kind, so
    a kind added later (azure_openai, openai_responses, a judge's own) is covered too."""
    if depth > 8:  # specs are a few levels deep; a hostile event must not recurse for ever
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "headers" and isinstance(item, dict):
                register_headers(item)
            else:
                _register_spec(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _register_spec(item, depth + 1)
    elif isinstance(value, str) and "://" in value:
        register_url(value)


def mask_config(value: Any) -> Any:
    """A configuration as reports may show it: sensitive values masked by name (header names,
    URL user info, query parameters) and registered secrets masked by value."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            if isinstance(v, str) and SENSITIVE_NAME.search(str(k)) and not _names_a_secret(k):
                out[k] = MASK
            else:
                out[k] = mask_config(v)
        return out
    if isinstance(value, list):
        return [mask_config(v) for v in value]
    if isinstance(value, str):
        if "://" in value:
            value = mask_url(value)
        return redact(value)
    return value


def _names_a_secret(key: Any) -> bool:
    """``api_key_env`` / ``api_key_secret`` hold the *name* of a secret, which is fine to show."""
    return str(key).lower().endswith(("_env", "_secret", "_header"))


# -- logs --------------------------------------------------------------------------------------

_installed = False


def install_log_redaction() -> None:
    """Wrap the logging record factory so every record, from any logger and to any handler,
    carries a redacted message and traceback. Idempotent; done on the first registration.

    A factory rather than a logger filter: filters on a logger do not see records that
    propagate from its children, and handlers (Powertools', pytest's) come and go."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if _pattern is None:
            return record
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to the handler to report
            return record
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[0] is not None:
            text = logging.Formatter().formatException(record.exc_info)
            record.exc_text = redact(text)
        return record

    logging.setLogRecordFactory(factory)
