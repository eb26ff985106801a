"""A model deployment on Azure OpenAI (``"azure_openai"``), by chat completions.

Azure serves OpenAI's chat completions under its own URL and authentication:

- the resource's endpoint (``https://<resource>.openai.azure.com``, or
  ``https://<resource>.cognitiveservices.azure.com`` and Azure AI Foundry's
  ``https://<resource>.services.ai.azure.com``; an API Management gateway in front of one
  works too, with its path);
- the *deployment* in the path and the ``api-version`` query parameter
  (``{endpoint}/openai/deployments/{deployment}/chat/completions?api-version=2024-10-21``),
  or, with ``api_version: "v1"``, Azure's v1 API (``{endpoint}/openai/v1/chat/completions``,
  no api-version, the deployment as the body's ``model``);
- the key in an ``api-key`` header (not ``Authorization``), or a Microsoft Entra ID access
  token as ``Authorization: Bearer`` when ``bearer_token_env`` names the variable holding one.

The key comes from an environment variable (``AZURE_OPENAI_API_KEY`` by default, the name
Azure's own SDKs read) or, deployed, from AWS Secrets Manager, through
:mod:`evalrunner.secrets` like every other secret: the value never sits in the event and is
registered for redaction before it is sent. The request and reply are OpenAI's, read by the
OpenAI-compatible kind's code (:mod:`evalrunner.targets.openai_chat`).
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal
from urllib.parse import quote, urlsplit

from pydantic import Field, WithJsonSchema, field_validator, model_validator

from evalrunner import redaction
from evalrunner.errors import ConfigError
from evalrunner.http_client import JsonHttpClient
from evalrunner.network import UrlCheck
from evalrunner.retry import BACKOFF_BASE_SECONDS
from evalrunner.secrets import api_key as read_api_key
from evalrunner.secrets import read_env
from evalrunner.suite.model import TestCase
from evalrunner.targets._common import retry_policy, sanitise_name
from evalrunner.targets.base import Target, TargetResponse
from evalrunner.targets.http import display_url
from evalrunner.targets.openai_chat import chat_messages, chat_reply, check_reasoning, sampling
from evalrunner.targets.registry import register
from evalrunner.targets.spec import SpecModel, TargetSpec, integral

#: The latest generally available data-plane version with a dated name (Azure's docs,
#: "API version lifecycle"); "v1" selects the v1 API, which takes none.
DEFAULT_API_VERSION = "2024-10-21"
#: The variable Azure's SDKs read the key from; allowed by default (see evalrunner.secrets).
DEFAULT_KEY_ENV = "AZURE_OPENAI_API_KEY"


class AzureOpenAIOptions(SpecModel):
    """The object under ``"azure_openai"``: the resource, the deployment, how to sign in."""

    endpoint: str = Field(
        pattern=r"^https?://",
        description="The resource's endpoint: https://<resource>.openai.azure.com, "
        "https://<resource>.cognitiveservices.azure.com or "
        "https://<resource>.services.ai.azure.com (an API Management gateway URL, with its "
        "path, works too). Without /openai/...: the deployment and API version are fields.",
    )
    deployment: str = Field(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
        description="The deployment name (what you named the model when you deployed it).",
    )
    api_version: str = Field(
        default=DEFAULT_API_VERSION,
        pattern=r"^(v1|\d{4}-\d{2}-\d{2}(-preview)?)$",
        description="The api-version query parameter (e.g. 2024-10-21, 2025-04-01-preview); "
        "'v1' calls Azure's v1 API (/openai/v1/chat/completions, the deployment as model).",
    )
    api_key_env: str = Field(
        default=DEFAULT_KEY_ENV,
        description="Environment variable with the key, sent as the api-key header (locally "
        "only; same rules as headers_from_env, AZURE_OPENAI_API_KEY allowed by default).",
    )
    api_key_secret: str | None = Field(
        default=None,
        min_length=1,
        description="AWS Secrets Manager secret (ARN or name, listed in cdk.json 'secrets') "
        "with the key; deployed runner only.",
    )
    bearer_token_env: str | None = Field(
        default=None,
        min_length=1,
        description="Environment variable holding a Microsoft Entra ID access token (e.g. "
        "from `az account get-access-token --resource https://cognitiveservices.azure.com`), "
        "sent as Authorization: Bearer instead of the api-key header. Locally only; same "
        "rules as headers_from_env (AZURE_OPENAI_AD_TOKEN allowed by default).",
    )
    system_prompt: str | None = None
    temperature: float = Field(default=0, ge=0, le=2)
    max_tokens: Annotated[int, Field(ge=1), integral] | None = None
    reasoning: bool = Field(
        default=False,
        description="A reasoning deployment (o-series, gpt-5): send no temperature and send "
        "max_tokens as max_completion_tokens, as the openai kind does.",
    )
    send_contexts: (
        Annotated[Literal["system", "user"], WithJsonSchema({"enum": ["system", "user"]})] | None
    ) = Field(
        default=None,
        description="As for the openai kind: send each case's contexts as numbered sources "
        "('system' or 'user' message), and record them as its retrieved contexts.",
    )

    @field_validator("endpoint")
    @classmethod
    def _resource_endpoint(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.query or parts.fragment:
            raise ValueError(
                "give the endpoint without a query string (the api version is api_version)"
            )
        if "/openai/" in f"{parts.path.rstrip('/')}/":
            raise ValueError(
                "give the resource's endpoint only (https://<resource>.openai.azure.com): the "
                "/openai/deployments/<name>/... path is built from deployment and api_version"
            )
        return value

    @model_validator(mode="after")
    def _reasoning_takes_no_temperature(self) -> AzureOpenAIOptions:
        check_reasoning(self)
        return self


class AzureOpenAIFields(SpecModel):
    """``{"azure_openai": {...}}``: a model deployment on Azure OpenAI."""

    schema_def: ClassVar[str] = "azureOpenAI"

    azure_openai: AzureOpenAIOptions


class AzureOpenAISpec(AzureOpenAIFields, TargetSpec):
    """An Azure OpenAI target as the event gives it."""


def chat_url(options: AzureOpenAIOptions) -> str:
    """Where the deployment's chat completions are: the deployment in the path and the API
    version in the query, or the v1 API's path."""
    base = options.endpoint.rstrip("/")
    if options.api_version == "v1":
        return f"{base}/openai/v1/chat/completions"
    deployment = quote(options.deployment, safe="")
    version = quote(options.api_version, safe="")
    return f"{base}/openai/deployments/{deployment}/chat/completions?api-version={version}"


@register
class AzureOpenAITarget(Target):
    """``POST {endpoint}/openai/deployments/{deployment}/chat/completions?api-version=...``
    with the case's turns and question, signed with ``api-key`` (or an Entra ID token)."""

    kind = "azure_openai"
    spec_model = AzureOpenAISpec
    options: AzureOpenAISpec

    #: First wait between retries (seconds, doubled per failure; see :mod:`evalrunner.retry`).
    backoff_factor = BACKOFF_BASE_SECONDS

    def __init__(self, spec: dict[str, Any], *, session: Any = None) -> None:
        super().__init__(spec)  # no AWS call: the session is not needed
        options = self.options.azure_openai
        self.deployment = options.deployment
        self.api_version = options.api_version
        self.url = chat_url(options)
        self.system_prompt = options.system_prompt
        self.send_contexts = options.send_contexts
        self.headers, self.signed_with = _credentials(spec["azure_openai"], options)
        redaction.register_url(self.url)
        self.check_url = UrlCheck(self.url, "target.azure_openai.endpoint")
        self.http = JsonHttpClient(
            retry_policy(self.options, base=self.backoff_factor, jitter=False),
            max_response_bytes=self.options.max_response_bytes,
        )

    @classmethod
    def own_name(cls, spec: dict[str, Any]) -> str:
        options = spec["azure_openai"]
        deployment = options.get("deployment", "") if isinstance(options, dict) else ""
        return sanitise_name(f"azure-{deployment}", fallback="azure-openai")

    @classmethod
    def sends_contexts(cls, spec: dict[str, Any]) -> str | None:
        options = spec.get("azure_openai")
        if isinstance(options, dict) and options.get("send_contexts"):
            return "target.azure_openai.send_contexts"
        return None

    def request_body(self, case: TestCase) -> dict[str, Any]:
        """OpenAI's chat request; the deployment, in the path, stands for the model (the
        v1 API takes it as ``model``)."""
        body: dict[str, Any] = {}
        if self.api_version == "v1":
            body["model"] = self.deployment
        body["messages"] = chat_messages(case, self.system_prompt, self.send_contexts)
        body.update(sampling(self.options.azure_openai))
        return body

    def invoke(self, case: TestCase) -> TargetResponse:
        what = f"Azure OpenAI deployment {self.deployment} at {display_url(self.url)}"
        self.check_url()
        result = self.http.send("POST", self.url, self.request_body(case), self.headers, what)
        auth_hint = (
            f"Check the {self.signed_with} (target.azure_openai.api_key_env / api_key_secret, "
            "or bearer_token_env for an Entra ID token), that the deployment exists on this "
            "resource, and that api_version is one the resource serves."
        )
        return chat_reply(result, what, case, self.send_contexts, auth_hint)


def _credentials(raw: dict[str, Any], options: AzureOpenAIOptions) -> tuple[dict[str, str], str]:
    """The headers that sign every request, and what signs them (for messages, never the
    value): an Entra ID token when ``bearer_token_env`` is given, else the key."""
    where = "target.azure_openai"
    if options.bearer_token_env:
        token = read_env(options.bearer_token_env, f"{where}.bearer_token_env")
        if not token:
            raise ConfigError(
                f"{where}.bearer_token_env: environment variable {options.bearer_token_env} "
                "is not set; export an Entra ID access token in it (or leave bearer_token_env "
                "out to sign with the api key)"
            )
        return {"Authorization": f"Bearer {token}"}, f"Entra ID token in {options.bearer_token_env}"
    key = read_api_key(raw, where, default_env=DEFAULT_KEY_ENV)
    if not key:
        raise ConfigError(
            f"{where}: no API key; set {options.api_key_env} (api_key_env) where evalrunner "
            "runs, name an allowed Secrets Manager secret in api_key_secret (deployed), or "
            "give bearer_token_env for an Entra ID token"
        )
    source = f"secret {options.api_key_secret}" if options.api_key_secret else options.api_key_env
    return {"api-key": key}, f"api key ({source})"
