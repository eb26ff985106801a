"""Regex detectors for personal data (PII) and secrets, shared by the leakage evaluators.

``find_pii(text)`` and ``find_secrets(text)`` return :class:`Finding` objects: a kind, a
redacted form safe to put in a reason, and the character span. The full value is never kept
in a finding (read it back from ``text[start:end]`` if you must compare it).

What each kind accepts is told where it is detected: :mod:`.pii` (``ssn``, ``email``,
``phone``, ``iban``, ``ipv4``, ``ipv6``), :mod:`.cards` (``card``), :mod:`.secrets` (PEM
blocks, cloud and SaaS keys and tokens, JWTs, passwords, connection strings, product keys);
:mod:`.findings` holds the finding, the masks and how overlapping candidates are resolved.

Design rules, because these run on every case of every run:

- Every pattern is linear time. Quantifiers are bounded or possessive (``++``, ``{1,5}+``),
  and a pattern that could start anywhere in a long run is only started at the run's first
  character (a lookbehind), so a 100k-character adversarial string scans in milliseconds.
  Patterns start with a plain character class or literal where they can, so that sre scans
  for that first character in C, with the boundary lookbehind after it (``(?<![a-z-].)``).
- Work is gated: one numeric pass decides whether the digit-based PII detectors can match
  at all, and each secret detector first checks for its literal anchor (``"AKIA"``,
  ``"-----BEGIN "``, ``"sk-"``, ...) with ``in``, so ordinary prose costs a few scans.
- Candidates are validated in Python (see each module) to keep false positives down. Where two
  kinds claim overlapping text, the one listed first in :data:`PII_KINDS` /
  :data:`SECRET_KINDS` wins.

Deliberately *not* reported (false-positive guards, each pinned by a test): prices, dates,
plain years, version strings (``1.2.3``, and ``v1.2.3.4`` / ``version 1.2.3.4``), order ids
and other bare digit runs (a 10-digit number without separators is not a phone number),
UUIDs, git SHAs and hashes, ``0.0.0.0`` / ``127.x`` / ``255.x`` addresses, the IPv6
loopback ``::1``, ``file@2x.png``, ``git@host:repo``, and placeholder passwords
(``***``, ``<password>``, ``${DB_PASSWORD}``, ``user:password@host``).
"""

from evalrunner.evaluators.detectors.findings import Finding
from evalrunner.evaluators.detectors.pii import PII_KINDS, find_pii
from evalrunner.evaluators.detectors.secrets import SECRET_KINDS, find_secrets

__all__ = [
    "PII_KINDS",
    "SECRET_KINDS",
    "Finding",
    "find_pii",
    "find_secrets",
]
