"""The judge's configuration: the event's ``judge`` object and ``--judge``."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator


class OpenAIJudge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(pattern=r"^https?://", description="e.g. https://api.openai.com/v1")
    model: str = Field(min_length=1)
    #: Env var with the key (default OPENAI_API_KEY; locally only, see evalrunner.secrets).
    api_key_env: str | None = Field(default=None, description="env var with the key")
    #: Secrets Manager secret (ARN or name listed in cdk.json 'secrets') with the key.
    api_key_secret: str | None = Field(default=None, description="Secrets Manager secret")
    #: Azure OpenAI and some gateways want the key in another header, e.g. "api-key".
    api_key_header: str = "Authorization"


class BedrockJudge(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model_id: str = Field(min_length=1, description="model or inference profile id/ARN")
    region: str | None = None


#: How the reply's schema reaches the model (see evalrunner.judge.structured):
#: ``auto`` detects it per endpoint; the others force one way.
StructuredOutput = Literal[
    "auto", "json_schema", "json_object", "json_mode", "guided_json", "tool_use", "none"
]
#: Modes each judge kind understands.
OPENAI_MODES = frozenset({"auto", "json_schema", "json_object", "json_mode", "guided_json", "none"})
BEDROCK_MODES = frozenset({"auto", "tool_use", "none"})


class JudgeConfig(BaseModel):
    """Exactly one of ``openai`` or ``bedrock``, plus how hard to try."""

    model_config = ConfigDict(extra="forbid")

    openai: OpenAIJudge | None = None
    bedrock: BedrockJudge | None = None
    #: Seconds one judge call may take (``--judge-timeout``): the whole request, waiting
    #: in a local server's queue included. Up to an hour, for small models on a CPU.
    timeout_seconds: float = Field(default=60, gt=0, le=3600)
    max_retries: int = Field(default=4, ge=0, le=10)
    #: The most judge calls in flight at once per endpoint (per process locally, per
    #: function instance in the cloud). The limit under it adapts (evalrunner.judge.limiter):
    #: it starts at 16 (or this, when lower), grows while the judge keeps up and narrows on
    #: 429s, 5xx, timeouts and rising latency, so a rate-limited judge slows the run down,
    #: never stops it. Set 1 for a server that answers one request at a time.
    max_concurrency: int = Field(default=32, ge=1, le=256)
    #: Content-addressed response cache: a re-run of unchanged cases costs nothing.
    cache: bool = True
    #: Local folder for the cache; default: the run bucket under judge-cache/.
    cache_dir: str | None = None
    #: The most tokens one reply may use. Each request asks for the budget its reply schema
    #: needs (evalrunner.judge.reply_format.reply_budget), never more than this; a reply cut
    #: at its budget is repaired with this whole budget.
    max_tokens: int = Field(default=4096, ge=64, le=65536)
    #: How the reply schema reaches the model: the server's structured output where there is
    #: one (json_schema: OpenAI, vLLM, llama.cpp's llama-server, Ollama; json_object with a
    #: schema: llama-cpp-python; guided_json: older vLLM; tool_use: Bedrock), else the prompt.
    structured_output: StructuredOutput = "auto"

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if (self.openai is None) == (self.bedrock is None):
            raise ValueError("give exactly one of 'openai' or 'bedrock'")
        kind, modes = ("openai", OPENAI_MODES) if self.openai else ("bedrock", BEDROCK_MODES)
        if self.structured_output not in modes:
            raise ValueError(
                f"structured_output {self.structured_output!r} does not apply to a {kind} "
                f"judge; use one of {', '.join(sorted(modes))}"
            )
        return self

    @property
    def model_name(self) -> str:
        if self.openai is not None:
            return self.openai.model
        assert self.bedrock is not None
        return self.bedrock.model_id
