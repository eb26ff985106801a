"""Whether a process publishes a monitor run's signals, read once from its environment into
:class:`~evalrunner.pipeline.context.Settings` (the stack sets these on the Aggregate
function; a local run sets none and keeps its series in the history instead)."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field

from evalrunner.errors import ConfigError

#: The CloudWatch namespace of the monitor series; unset: nothing is put.
ENV_NAMESPACE = "EVALRUNNER_SIGNALS_NAMESPACE"
#: How many of the worst interactions the run's SNS message lists.
ENV_WORST = "EVALRUNNER_SIGNALS_WORST"
#: How many characters of each text of an interaction the message keeps.
ENV_TEXT_CHARS = "EVALRUNNER_SIGNALS_TEXT_CHARS"

DEFAULT_NAMESPACE = "evalrunner/monitor"


class SignalSettings(BaseModel):
    """Where a monitor run's signals go."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: CloudWatch namespace of the series (None: no metric is put).
    namespace: str | None = None
    #: The worst interactions listed in the run's notification (0: none).
    worst: int = Field(default=5, ge=0, le=20)
    #: Characters kept of each question and answer in the notification.
    text_chars: int = Field(default=300, ge=40, le=2000)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SignalSettings:
        try:
            return cls(
                namespace=env.get(ENV_NAMESPACE) or None,
                worst=int(env.get(ENV_WORST) or 5),
                text_chars=int(env.get(ENV_TEXT_CHARS) or 300),
            )
        except ValueError as exc:
            raise ConfigError(
                f"{ENV_WORST} / {ENV_TEXT_CHARS}: {exc} (the stack sets them from cdk.json "
                "monitor.signals; redeploy it)"
            ) from None
