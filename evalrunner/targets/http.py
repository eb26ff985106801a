"""Any HTTP endpoint that takes a JSON question and answers JSON (``"url"``).

This is the escape hatch for systems that are not on AWS or not behind a Lambda: a FastAPI
app, an API Gateway stage, a container on a laptop. Secrets for its headers come from
allowed environment variables (``headers_from_env``) or, deployed, from AWS Secrets Manager
(``headers_from_secret``), through :mod:`evalrunner.secrets`, so they never sit in an event or
a report.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from evalrunner import redaction
from evalrunner.errors import ConfigError
from evalrunner.http_client import JsonHttpClient, status_error
from evalrunner.network import check_url
from evalrunner.retry import BACKOFF_BASE_SECONDS
from evalrunner.secrets import resolve_headers
from evalrunner.suite.model import TestCase
from evalrunner.targets import adapters
from evalrunner.targets._common import (
    max_response_bytes,
    question_payload,
    report_name,
    retry_policy,
    sanitise_name,
)
from evalrunner.targets.base import Target, TargetResponse


def endpoint_name(url: str) -> str:
    """``https://api.example.com/v1/chat`` → ``api.example.com-v1-chat``."""
    parts = urlsplit(url)
    return sanitise_name(f"{parts.hostname or ''}{parts.path}", fallback="http")


def display_url(url: str) -> str:
    """The URL without credentials or query string, safe to put in errors and logs."""
    parts = urlsplit(url)
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname or ''}{port}{parts.path}"


class HttpTarget(Target):
    """POSTs (or PUTs) ``{question_field: question, "conversation": [...]}`` as JSON."""

    kind = "url"

    #: First wait between retries (seconds; doubled per consecutive failure, see
    #: :mod:`evalrunner.retry`). No jitter: an HTTP target has always waited the whole window.
    backoff_factor = BACKOFF_BASE_SECONDS

    def __init__(self, spec: dict[str, Any]) -> None:
        super().__init__(spec)
        self.url = str(spec["url"])
        self.method = str(spec.get("method", "POST")).upper()
        if self.method not in ("POST", "PUT"):
            raise ConfigError(f"target.method must be POST or PUT, got {self.method!r}")
        self.question_field = str(spec.get("question_field", "question"))
        self.headers = {**(spec.get("headers") or {}), **resolve_headers(spec)}
        # Credentials written into the event itself are masked by value too, like secrets.
        redaction.register_headers(self.headers)
        redaction.register_url(self.url)
        self.mapping = adapters.ResponseMapping.from_spec(spec)
        self.http = JsonHttpClient(
            retry_policy(spec, base=self.backoff_factor, jitter=False),
            max_response_bytes=max_response_bytes(spec),
        )

    @property
    def name(self) -> str:
        return report_name(self.spec, endpoint_name(self.url))

    def invoke(self, case: TestCase) -> TargetResponse:
        what = f"{self.method} {display_url(self.url)}"
        check_url(self.url, "target.url")
        result = self.http.send(
            self.method, self.url, question_payload(case, self.question_field), self.headers, what
        )
        if not 200 <= result.status < 300:
            raise status_error(
                result,
                what,
                auth_hint="Check target.headers / headers_from_env / headers_from_secret.",
            )
        return adapters.normalise(result.json(what), self.mapping, source=what)
