"""The judge's configuration: the event's ``judge`` object and ``--judge``."""

from __future__ import annotations

from typing import Self

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


class JudgeConfig(BaseModel):
    """Exactly one of ``openai`` or ``bedrock``, plus how hard to try."""

    model_config = ConfigDict(extra="forbid")

    openai: OpenAIJudge | None = None
    bedrock: BedrockJudge | None = None
    timeout_seconds: float = Field(default=60, gt=0, le=600)
    max_retries: int = Field(default=4, ge=0, le=10)
    #: Judge calls in flight at once for the whole run (per process locally, per function
    #: instance in the cloud): a rate-limited judge slows the run down, never stops it.
    max_concurrency: int = Field(default=8, ge=1, le=256)
    #: Content-addressed response cache: a re-run of unchanged cases costs nothing.
    cache: bool = True
    #: Local folder for the cache; default: the run bucket under judge-cache/.
    cache_dir: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if (self.openai is None) == (self.bedrock is None):
            raise ValueError("give exactly one of 'openai' or 'bedrock'")
        return self

    @property
    def model_name(self) -> str:
        if self.openai is not None:
            return self.openai.model
        assert self.bedrock is not None
        return self.bedrock.model_id
