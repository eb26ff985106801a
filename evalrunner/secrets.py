"""The one place where secrets are resolved, and the rules on which ones an event may name.

An event can come from anyone who may upload a suite and its sidecar, so it may only *name*
a secret the operator allowed; the value never sits in the event, and every value read here is
registered for redaction (:mod:`evalrunner.redaction`) before it is returned.

- **Locally** (the embedded engine, the CLI) secrets come from environment variables, and an
  event may name only: variables starting with ``EVALRUNNER_SECRET_``; ``OPENAI_API_KEY`` (the
  documented default key of OpenAI-compatible targets and judges); and the names the operator
  lists, comma-separated, in ``EVALRUNNER_ALLOWED_SECRET_ENV``. ``AWS_*`` never, whatever the
  list says.
- **Deployed** the stack sets ``EVALRUNNER_SECRETS_POLICY`` (JSON, from ``cdk.json``'s
  ``secrets``): environment variables are not read on an event's behalf at all, and an event
  names a secret of AWS Secrets Manager by ARN or name (``headers_from_secret``,
  ``api_key_secret``); only the ARNs listed in ``cdk.json`` may be named, and the function's
  role may read exactly those.

Event fields that name secrets: ``target.headers_from_env`` / ``target.headers_from_secret``
(header → name), ``api_key_env`` / ``api_key_secret`` (and Azure's ``bearer_token_env``) of a
target kind's options object (``target.openai``, ``target.azure_openai``,
``target.openai_responses``), and ``judge.openai.api_key_env`` / ``api_key_secret``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalrunner import redaction
from evalrunner.errors import ConfigError
from evalrunner.stack_policy import stack_policy

ENV_PREFIX = "EVALRUNNER_SECRET_"
#: Local operator setting: further variable names an event may use, comma-separated.
ENV_ALLOWED_ENV = "EVALRUNNER_ALLOWED_SECRET_ENV"
#: Set by the stack on every function: ``{"allowed_secrets": ["arn:aws:secretsmanager:..."]}``.
ENV_POLICY = "EVALRUNNER_SECRETS_POLICY"
#: Names allowed locally without listing them: the documented default key variables (of
#: OpenAI-compatible targets and judges, and Azure OpenAI's key and Entra ID token).
BUILTIN_ENV = ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_AD_TOKEN")
#: Fields of a target kind's options object that name a secret (variable or secret).
_ENV_FIELDS = ("api_key_env", "bearer_token_env")
_SECRET_FIELDS = ("api_key_secret",)
#: Never readable on an event's behalf: the runner's own credentials live here.
FORBIDDEN_ENV = re.compile(r"^AWS_", re.I)

SECRET_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:secretsmanager:[a-z]{2}(-[a-z]+)+-\d:\d{12}:secret:[A-Za-z0-9/_+=.@-]+$"
)
#: Secrets Manager appends "-" and six characters to a secret's name to form its ARN.
_ARN_SUFFIX = re.compile(r"-[A-Za-z0-9]{6}$")


class SecretPolicy(BaseModel):
    """What an event may name. Parsed once per process from the environment
    (:func:`current_policy`); the stack writes ``allowed_secrets`` from ``cdk.json``."""

    model_config = ConfigDict(extra="forbid")

    #: True where the stack set the policy: env vars are refused, Secrets Manager is used.
    deployed: bool = False
    #: Full ARNs of the Secrets Manager secrets an event may name (deployed).
    allowed_secrets: list[str] = Field(default_factory=list)
    #: Environment variables an event may name besides EVALRUNNER_SECRET_* (local).
    allowed_env: list[str] = Field(default_factory=list)

    def env_problem(self, name: str, field: str) -> str | None:
        """Why ``name`` may not be read for ``field`` (None: it may)."""
        if FORBIDDEN_ENV.match(name):
            return (
                f"{field}: {name} is not an allowed secret variable (AWS_* variables hold the "
                f"runner's own credentials and are never sent); put the value in a variable "
                f"named {ENV_PREFIX}..."
            )
        if self.deployed:
            return (
                f"{field}: environment variables are not read in the deployed runner; name a "
                "Secrets Manager secret listed in cdk.json 'secrets' instead "
                "(headers_from_secret / api_key_secret)"
            )
        if name.startswith(ENV_PREFIX) or name in BUILTIN_ENV or name in self.allowed_env:
            return None
        return (
            f"{field}: {name} is not an allowed secret variable; name it {ENV_PREFIX}... "
            f"or list it in {ENV_ALLOWED_ENV} (comma-separated) where evalrunner runs"
        )

    def secret_arn(self, ref: str) -> str | None:
        """The allowed ARN that ``ref`` (a full ARN or a secret's name) designates."""
        for arn in self.allowed_secrets:
            if ref == arn or ref == secret_name(arn):
                return arn
        return None

    def secret_problem(self, ref: str, field: str) -> str | None:
        """Why the secret ``ref`` may not be read for ``field`` (None: it may)."""
        if not self.deployed:
            return None  # checked where it runs: locally reading it is refused (read_secret)
        if self.secret_arn(ref) is None:
            allowed = ", ".join(secret_name(a) for a in self.allowed_secrets) or "none"
            return (
                f"{field}: {ref} is not an allowed secret; add its ARN to 'secrets' in "
                f"cdk.json and redeploy (allowed: {allowed})"
            )
        return None


def secret_name(arn: str) -> str:
    """``arn:...:secret:prod/qa-token-AbC123`` → ``prod/qa-token``."""
    name = arn.split(":secret:", 1)[-1]
    return _ARN_SUFFIX.sub("", name)


@cache
def _policy_from(raw_policy: str | None, raw_env: str | None) -> SecretPolicy:
    allowed_env = [n.strip() for n in (raw_env or "").split(",") if n.strip()]
    return stack_policy(
        SecretPolicy,
        ENV_POLICY,
        raw_policy,
        set_by_stack="deployed",
        source="cdk.json 'secrets'",
        local={"allowed_env": allowed_env},
    )


def current_policy(environ: Mapping[str, str] | None = None) -> SecretPolicy:
    """The policy of this process, from ``EVALRUNNER_SECRETS_POLICY`` and
    ``EVALRUNNER_ALLOWED_SECRET_ENV``."""
    env = os.environ if environ is None else environ
    return _policy_from(env.get(ENV_POLICY), env.get(ENV_ALLOWED_ENV))


# -- reading -----------------------------------------------------------------------------------


def read_env(name: str, field: str, *, policy: SecretPolicy | None = None) -> str | None:
    """The variable's value (None when unset), registered for redaction; ConfigError when
    the policy refuses the name."""
    problem = (policy or current_policy()).env_problem(name, field)
    if problem:
        raise ConfigError(problem)
    value = os.environ.get(name)
    redaction.register(value)
    return value


def read_secret(
    ref: str, field: str, *, policy: SecretPolicy | None = None, client: Any | None = None
) -> str:
    """The SecretString of an allowed Secrets Manager secret, registered for redaction."""
    policy = policy or current_policy()
    if not policy.deployed:
        raise ConfigError(
            f"{field}: Secrets Manager secrets are read by the deployed runner only; for a "
            f"local run give the value in an environment variable named {ENV_PREFIX}... and "
            "use headers_from_env / api_key_env"
        )
    problem = policy.secret_problem(ref, field)
    if problem:
        raise ConfigError(problem)
    arn = policy.secret_arn(ref)
    if client is None:
        import boto3

        client = boto3.client("secretsmanager")
    try:
        answer = client.get_secret_value(SecretId=arn)
    except Exception as exc:  # botocore ClientError and friends: name the secret, not values
        raise ConfigError(
            f"{field}: cannot read secret {secret_name(str(arn))} from Secrets Manager "
            f"({type(exc).__name__}: {exc}); check it exists and the stack was redeployed "
            "after listing it in cdk.json"
        ) from None
    value = answer.get("SecretString")
    if not isinstance(value, str):
        raise ConfigError(
            f"{field}: secret {secret_name(str(arn))} has no SecretString (binary secrets are "
            "not supported); store the value as text"
        )
    redaction.register(value)
    return value


def resolve_headers(spec: Mapping[str, Any], where: str = "target") -> dict[str, str]:
    """``headers_from_env`` and ``headers_from_secret`` of ``spec`` as header → value."""
    headers: dict[str, str] = {}
    for header, name in (spec.get("headers_from_env") or {}).items():
        field = f"{where}.headers_from_env.{header}"
        value = read_env(str(name), field)
        if value is None:
            raise ConfigError(
                f"{field}: environment variable {name} is not set. Export {name} where "
                "evalrunner runs."
            )
        headers[header] = value
    for header, ref in (spec.get("headers_from_secret") or {}).items():
        headers[header] = read_secret(str(ref), f"{where}.headers_from_secret.{header}")
    return headers


def api_key(
    options: Mapping[str, Any], where: str, default_env: str = "OPENAI_API_KEY"
) -> str | None:
    """An OpenAI-style key: ``api_key_secret`` if given, else ``api_key_env`` (default
    ``OPENAI_API_KEY``, read only where env vars may be read). None: send no key."""
    secret = options.get("api_key_secret")
    if secret:
        return read_secret(str(secret), f"{where}.api_key_secret")
    name = options.get("api_key_env")
    policy = current_policy()
    if not name:
        if policy.deployed:  # the implicit default is not read where env vars are refused
            return None
        name = default_env
    return read_env(str(name), f"{where}.api_key_env", policy=policy) or None


# -- validation --------------------------------------------------------------------------------


def event_problems(event: Mapping[str, Any], policy: SecretPolicy | None = None) -> list[str]:
    """Every secret an event names that the policy refuses, one line per field."""
    policy = policy or current_policy()
    problems: list[str] = []

    def env(name: Any, field: str) -> None:
        if isinstance(name, str) and (p := policy.env_problem(name, field)):
            problems.append(p)

    def secret(ref: Any, field: str) -> None:
        if isinstance(ref, str) and (p := policy.secret_problem(ref, field)):
            problems.append(p)

    target = event.get("target")
    if isinstance(target, Mapping):
        for kind, check in (("headers_from_env", env), ("headers_from_secret", secret)):
            mapping = target.get(kind)
            if isinstance(mapping, Mapping):
                for header, name in mapping.items():
                    check(name, f"target.{kind}.{header}")
        # every kind whose options object signs its calls (openai, azure_openai, ...)
        for kind, options in target.items():
            if not isinstance(options, Mapping):
                continue
            for name in _ENV_FIELDS:
                env(options.get(name), f"target.{kind}.{name}")
            for name in _SECRET_FIELDS:
                secret(options.get(name), f"target.{kind}.{name}")
    judge = event.get("judge")
    options = judge.get("openai") if isinstance(judge, Mapping) else None
    if isinstance(options, Mapping):
        env(options.get("api_key_env"), "judge.openai.api_key_env")
        secret(options.get("api_key_secret"), "judge.openai.api_key_secret")
    return problems
