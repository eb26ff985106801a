"""Secrets in text: :func:`find_secrets`.

What each kind accepts (everything else is rejected):

- ``private_key`` / ``certificate``: a PEM block with matching BEGIN and END labels (a
  private key cut off before its END still counts); public keys and CSRs do not.
- ``aws_access_key``: AKIA/ASIA + 16 upper-case alphanumerics; ``aws_secret_key``: 40
  base64 characters of mixed case with a digit or "/+", starting within 100 characters
  after "aws" or "secret".
- ``openai_key`` (sk-, sk-proj-), ``anthropic_key`` (sk-ant-), ``github_token`` (ghp_,
  gho_, ghu_, ghs_, ghr_, github_pat_), ``slack_token`` (xoxa-, xoxb-, xoxp-, xoxr-),
  ``google_api_key`` (AIza + 35).
- ``jwt``: three base64url parts whose header decodes to a JSON object with "alg" (and a
  signature of 16+ characters unless alg is "none").
- ``password``: "password: x", "pwd=x", "passwd", "passphrase", "passcode", JSON
  ``"password": "x"``, "the password is x" (then x must have a digit or symbol, or be
  quoted); ``connection_string``: scheme://user:password@host.
- ``product_key``: five groups of five upper-case letters and digits with both in it.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable

from evalrunner.evaluators.detectors.findings import (
    Candidate,
    Finding,
    mask_token,
    resolve_overlaps,
)

__all__ = ["SECRET_KINDS", "find_secrets"]


#: Secret kinds in priority order (the first wins on overlapping text).
SECRET_KINDS: tuple[str, ...] = (
    "private_key",
    "certificate",
    "jwt",
    "connection_string",
    "aws_access_key",
    "aws_secret_key",
    "github_token",
    "slack_token",
    "google_api_key",
    "anthropic_key",
    "openai_key",
    "product_key",
    "password",
)


# --------------------------------------------------------------------------------------------
# PEM blocks

_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9]++(?: [A-Z0-9]++)*+)-----")
# Base64 body and RFC 1421 headers ("Proc-Type: 4,ENCRYPTED"); a run of five dashes ends it.
_PEM_BODY = re.compile(r"(?:[A-Za-z0-9+/=\s:,.]++|-(?!----))*+")
_B64_CHAR = re.compile(r"[A-Za-z0-9+/]")


def _pems(text: str) -> Iterable[Candidate]:
    for m in _PEM_BEGIN.finditer(text):
        label = m.group(1)
        if "PRIVATE KEY" in label:
            kind = "private_key"
        elif label.endswith("CERTIFICATE"):
            kind = "certificate"
        else:
            continue  # public keys, certificate requests: not secrets
        body = _PEM_BODY.match(text, m.end())
        assert body is not None  # the pattern matches the empty string
        footer = f"-----END {label}-----"
        size = len(_B64_CHAR.findall(body.group()))
        if text.startswith(footer, body.end()):
            end = body.end() + len(footer)
        elif kind == "private_key" and size >= 32:
            end = body.end()  # truncated key: still a leak
        else:
            continue
        yield m.start(), end, kind, f"-----BEGIN {label}----- …({size} base64 chars)"


# --------------------------------------------------------------------------------------------
# prefixed tokens


def _bounded(text: str, start: int, end: int, word: str) -> bool:
    """Neither the character before ``start`` nor the one at ``end`` is in ``word``."""
    return (start == 0 or text[start - 1] not in word) and (
        end >= len(text) or text[end] not in word
    )


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_TOKEN_CHARS = _ALNUM + "_-"
_AWS_KEY_ID = re.compile(r"A(?:KIA|SIA)[A-Z0-9]{16}")


def _aws_key_ids(text: str) -> Iterable[Candidate]:
    for m in _AWS_KEY_ID.finditer(text):
        if _bounded(text, m.start(), m.end(), _ALNUM):
            v = m.group()
            yield m.start(), m.end(), "aws_access_key", f"{v[:4]}************{v[-4:]}"


_AWS_SECRET = re.compile(r"[A-Za-z0-9/+](?<![A-Za-z0-9/+=].)[A-Za-z0-9/+]{39}")
_AWS_CONTEXT = re.compile(r"aws|secret", re.IGNORECASE)
_B64_KEY_CHARS = frozenset(_ALNUM + "/+=")


def _aws_secret_keys(text: str) -> Iterable[Candidate]:
    """40 base64 characters starting within 100 characters after "aws" or "secret"."""
    # Windows after each keyword, merged where they overlap so each is scanned once.
    # Positions come from ``text`` itself: lower() may change the length of some strings.
    windows: list[tuple[int, int]] = []
    for k in _AWS_CONTEXT.finditer(text):
        start, end = k.end(), min(len(text), k.end() + 140)
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], end)
        else:
            windows.append((start, end))
    for start, end in windows:
        for m in _AWS_SECRET.finditer(text, start, end):
            if m.end() < len(text) and text[m.end()] in _B64_KEY_CHARS:
                continue  # longer than 40 characters
            v = m.group()
            if (
                any(c.isupper() for c in v)
                and any(c.islower() for c in v)
                and any(c.isdigit() or c in "/+" for c in v)
            ):  # else a word or a lowercase hex digest, not a random key
                yield m.start(), m.end(), "aws_secret_key", mask_token(v, 0)


_SK = re.compile(r"sk-[A-Za-z0-9_-]{20,}+")


def _sk_keys(text: str) -> Iterable[Candidate]:
    for m in _SK.finditer(text):
        v = m.group()
        if not _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            continue
        body = v[3:]
        if not (any(c.isdigit() for c in body) and any(c.isalpha() for c in body)):
            continue
        if v.startswith("sk-ant-"):
            yield m.start(), m.end(), "anthropic_key", mask_token(v, 7)
        else:
            prefix = 8 if v.startswith("sk-proj-") else 3
            yield m.start(), m.end(), "openai_key", mask_token(v, prefix)


_GITHUB = re.compile(r"gh[pousr]_[A-Za-z0-9]{36,}+|github_pat_[A-Za-z0-9_]{22,}+")


def _github_tokens(text: str) -> Iterable[Candidate]:
    for m in _GITHUB.finditer(text):
        if _bounded(text, m.start(), m.end(), _ALNUM + "_"):
            v = m.group()
            prefix = 11 if v.startswith("github_pat_") else 4
            yield m.start(), m.end(), "github_token", mask_token(v, prefix)


_SLACK = re.compile(r"xox[abpr]-[A-Za-z0-9-]{10,}+")


def _slack_tokens(text: str) -> Iterable[Candidate]:
    for m in _SLACK.finditer(text):
        v = m.group()
        if _bounded(text, m.start(), m.end(), _ALNUM + "-") and any(c.isdigit() for c in v):
            yield m.start(), m.end(), "slack_token", mask_token(v, 5)


_GOOGLE = re.compile(r"AIza[0-9A-Za-z_-]{35}")


def _google_keys(text: str) -> Iterable[Candidate]:
    for m in _GOOGLE.finditer(text):
        if _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            yield m.start(), m.end(), "google_api_key", mask_token(m.group(), 4)


# --------------------------------------------------------------------------------------------
# JWTs

# A JSON header starts with '{"' or '{ "': "eyJ" or "eyA" in base64url.
_JWT = re.compile(r"ey[JA][A-Za-z0-9_-]{6,}+\.[A-Za-z0-9_-]{2,}+\.[A-Za-z0-9_-]*+")


def _b64url_json(part: str) -> object:
    if len(part) % 4 == 1:
        raise ValueError("not base64url")
    raw = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    return json.loads(raw)


def _jwts(text: str) -> Iterable[Candidate]:
    for m in _JWT.finditer(text):
        if not _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            continue
        header, payload, signature = m.group().split(".")
        try:
            head = _b64url_json(header)
        except (ValueError, binascii.Error, UnicodeDecodeError):
            continue
        if not isinstance(head, dict) or "alg" not in head:
            continue
        if len(payload) % 4 == 1:
            continue
        unsigned = str(head.get("alg")).lower() == "none"
        if not unsigned and len(signature) < 16:
            continue
        alg = str(head.get("alg"))[:10]
        yield m.start(), m.end(), "jwt", f"JWT alg={alg} …({len(m.group())} chars)"


# --------------------------------------------------------------------------------------------
# passwords and connection strings

_PASSWORD = re.compile(
    r"(?<![A-Za-z])(pass(?:word|wd|phrase|code)|pwd)(?![A-Za-z])[\"']?[ \t]*"
    r"(:=|[:=]|is\b)[ \t]*"
    r"(?:([\"'`])([^\"'`\n]{1,128}+)\3|([^\s\"'`,;]{1,128}+))",
    re.IGNORECASE,
)
_PLACEHOLDER = re.compile(
    r"[*•x.#_-]+|<[^>]*>|\{[^}]*\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\[[^\]]*\]|%s|\.\.\.|…"
    r"|(?i:password|passwd|pass|pwd|secret|redacted|hidden|none|null|your[_-]?password)",
    re.IGNORECASE,
)
_NOT_PASSWORDS = frozenset(
    "required incorrect invalid wrong expired reset changed protected must should will was "
    "is are be the a an your my their this that field policy length manager strength "
    "rules requirements empty blank set not".split()
)


def _passwords(text: str) -> Iterable[Candidate]:
    for m in _PASSWORD.finditer(text):
        keyword, op, quoted = m.group(1), m.group(2).lower(), m.group(4)
        value = quoted if quoted is not None else m.group(5)
        end = m.end()
        if quoted is None:
            stripped = value.rstrip(".!?)]:")
            end -= len(value) - len(stripped)
            value = stripped
        if not value or value[0] in "<{[(" or _PLACEHOLDER.fullmatch(value):
            continue  # <your password>, {{password}}, [redacted], ***, ${DB_PASSWORD}
        if value.lower() in _NOT_PASSWORDS:
            continue
        if keyword.lower() == "pwd" and value[0] in "/~.":
            continue  # $PWD, a path
        letters_only = value.isalpha()
        if quoted is None and letters_only:
            if op == "is":
                continue  # "the password is incorrect"
            if op == ":":
                rest = text[end : end + 2].lstrip(" \t")
                if rest and rest[0] not in "\n,;.)":
                    continue  # "Password: reset it in the portal" is prose
        redacted = f"{keyword}{'=' if op != 'is' else ' is '}{'*' * 8}"
        yield m.start(), end, "password", redacted


_CONN = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{1,20}+://([^\s:/@?#]{1,128}+):([^\s@/?#]{1,128}+)@")


def _connection_strings(text: str) -> Iterable[Candidate]:
    for m in _CONN.finditer(text):
        if m.start() and text[m.start() - 1].isalnum():
            continue
        password = m.group(2)
        if _PLACEHOLDER.fullmatch(password):
            continue
        host = _HOST.match(text, m.end())
        end = host.end() if host else m.end()
        scheme = text[m.start() : m.start(1)]
        yield (
            m.start(),
            end,
            "connection_string",
            (f"{scheme}{m.group(1)}:****@{host.group() if host else ''}"),
        )


_HOST = re.compile(r"[A-Za-z0-9.-]{1,253}+(?::[0-9]{1,5}+)?")


# --------------------------------------------------------------------------------------------
# activation / product keys

_PRODUCT_KEY = re.compile(r"[A-Z0-9]{5}(?:-[A-Z0-9]{5}){4}")


def _product_keys(text: str) -> Iterable[Candidate]:
    for m in _PRODUCT_KEY.finditer(text):
        if not _bounded(text, m.start(), m.end(), _TOKEN_CHARS):
            continue
        v = m.group()
        digits = sum(c.isdigit() for c in v)
        if digits < 2 or digits > 20:
            continue  # XXXXX-XXXXX-... placeholders and pure digit groups
        yield m.start(), m.end(), "product_key", f"*****-*****-*****-*****-**{v[-3:]}"


# --------------------------------------------------------------------------------------------
# scanning

_SECRET_RANK = {kind: i for i, kind in enumerate(SECRET_KINDS)}


def find_secrets(text: str) -> list[Finding]:
    """Secrets in ``text``: PEM private keys and certificates, cloud and SaaS API keys and
    tokens, JWTs, passwords and credentials in URLs, product keys, in order of position."""
    # Each detector runs only when its literal anchor is in the text (checked here, inline,
    # because on ordinary prose these ``in`` checks are the whole cost).
    candidates: list[Candidate] = []
    if "-" in text:
        if "-----BEGIN " in text:
            candidates.extend(_pems(text))
        if "sk-" in text:
            candidates.extend(_sk_keys(text))
        if "xox" in text:
            candidates.extend(_slack_tokens(text))
        if text.count("-") >= 4:
            candidates.extend(_product_keys(text))
    if "ey" in text and ("eyJ" in text or "eyA" in text):
        candidates.extend(_jwts(text))
    if "://" in text:
        candidates.extend(_connection_strings(text))
    if "A" in text:
        if "AKIA" in text or "ASIA" in text:
            candidates.extend(_aws_key_ids(text))
        if "AIza" in text:
            candidates.extend(_google_keys(text))
    if "_" in text and "gh" in text:
        candidates.extend(_github_tokens(text))
    low = text.lower()
    if "aws" in low or "secret" in low:
        candidates.extend(_aws_secret_keys(text))
    if "pass" in low or "pwd" in low:
        candidates.extend(_passwords(text))
    return resolve_overlaps(candidates, _SECRET_RANK)
