"""What a run uses when its event does not say: the default judge and the default metrics.

The seed runner's users start runs with events that name no judge (their runner judged with
Claude on Bedrock) and often no metric (it evaluated a fixed set). The operator decides both
once, for every such run:

- deployed, in ``cdk.json`` (``judge``, ``default_metrics``), which the stack hands to every
  function as :data:`ENV_JUDGE` and :data:`ENV_DEFAULT_METRICS`;
- locally, in the same two environment variables, or in a config file
  (``{"judge": {...}, "default_metrics": [...]}``) at ``$EVALRUNNER_CONFIG``, else
  ``~/.config/evalrunner/config.json``. The variables win over the file.

The operator's environment and ``cdk.json`` are trusted (DESIGN.md, trust boundaries); an
event can only add its own ``judge`` or ``metrics``, never read these.

They are read once (:meth:`RunDefaults.read`) into the run's
:class:`~evalrunner.pipeline.context.Settings` and handed to the event's validation
(``read_event(..., defaults=)``), so a run's defaults are those of the process that started
it, not of the environment at the moment some rule looks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalrunner.errors import ConfigError

#: The judge a run without an event ``judge`` uses (a judge config as JSON).
ENV_JUDGE = "EVALRUNNER_JUDGE"
#: The evaluators a run that names no metric uses, besides the cheap CPU checks (JSON list).
ENV_DEFAULT_METRICS = "EVALRUNNER_DEFAULT_METRICS"
#: The profile (:mod:`evalrunner.profiles`) a run that names no metric and no profile uses.
ENV_PROFILE = "EVALRUNNER_PROFILE"
#: Path of the local config file.
ENV_CONFIG = "EVALRUNNER_CONFIG"
DEFAULT_CONFIG_FILE = Path("~/.config/evalrunner/config.json")

#: The default judge: Claude on Bedrock through the Converse API (cdk.json's default), as the
#: seed runner judged. Claude Sonnet 4.5 through the US cross-region inference profile: the
#: seed's Claude 3.5 Sonnet (20240620) reached end of life on Bedrock
#: (:mod:`evalrunner.judge.lifecycle`); outside the US use its eu./jp./au./global. profile.
DEFAULT_BEDROCK_JUDGE: dict[str, Any] = {
    "bedrock": {"model_id": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}
}
#: What the seed runner evaluated when no metric was named (cdk.json's default): Rouge, BERT
#: Score, Bias and Toxicity on every answer; the five RAG judge metrics, which skip a case
#: whose target returned no citations (they need the retrieved context).
SEED_DEFAULT_METRICS: tuple[str, ...] = (
    "Rouge Metric",
    "BERT Score",
    "Bias",
    "Toxicity",
    "Faithfulness",
    "Answer Relevancy",
    "Contextual Precision",
    "Contextual Recall",
    "Contextual Relevancy",
)


def _config_file(environ: Mapping[str, str]) -> dict[str, Any]:
    path = Path(environ.get(ENV_CONFIG) or DEFAULT_CONFIG_FILE).expanduser()
    if not path.is_file():
        if environ.get(ENV_CONFIG):
            raise ConfigError(f"{ENV_CONFIG}={path}: no such file")
        return {}
    return _read_file(str(path))


@cache
def _read_file(path: str) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"the evalrunner config file {path} is not readable JSON: {exc}"
        ) from None
    if not isinstance(doc, dict) or set(doc) - {"judge", "default_metrics", "profile"}:
        raise ConfigError(
            f"the evalrunner config file {path} must be an object with 'judge', "
            "'default_metrics' and/or 'profile'"
        )
    return doc


def _env_json(environ: Mapping[str, str], name: str) -> Any:
    text = environ.get(name)
    if not text or not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{name} is not valid JSON ({exc})") from None


def default_judge(environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], str] | None:
    """The configured default judge and where it came from, or None when none is."""
    environ = os.environ if environ is None else environ
    value = _env_json(environ, ENV_JUDGE)
    where = ENV_JUDGE
    if value is None:
        value, where = _config_file(environ).get("judge"), "the evalrunner config file"
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"the default judge ({where}) must be a JSON object")
    return value, where


def default_metrics(environ: Mapping[str, str] | None = None) -> list[str] | None:
    """The configured default evaluators (added to the cheap CPU checks), or None."""
    environ = os.environ if environ is None else environ
    value = _env_json(environ, ENV_DEFAULT_METRICS)
    where = ENV_DEFAULT_METRICS
    if value is None:
        value, where = _config_file(environ).get("default_metrics"), "the evalrunner config file"
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"the default metrics ({where}) must be a JSON list of names")
    return list(value)


def default_profile(environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The operator's profile for runs that name no metric and no profile, and where it was
    set (deployed: cdk.json ``profile``), or None."""
    environ = os.environ if environ is None else environ
    value: Any = (environ.get(ENV_PROFILE) or "").strip() or None
    where = ENV_PROFILE
    if value is None:
        value, where = _config_file(environ).get("profile"), "the evalrunner config file"
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"the default profile ({where}) must be a profile name")
    return value, where


class RunDefaults(BaseModel):
    """The operator's defaults as read once (:meth:`read`): each one's value and where it
    was set, or the problem reading it. A problem is kept, not raised, because it belongs to
    the events that need the default: each reports it among its own problems, in the same
    words as when the rules read the environment themselves."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The default judge (a judge config) and where it was set; None: none configured.
    judge: tuple[dict[str, Any], str] | None = None
    judge_problem: str | None = None
    #: The default evaluators; None: none configured.
    metrics: list[str] | None = None
    metrics_problem: str | None = None
    #: The default profile and where it was set; None: none configured.
    profile: tuple[str, str] | None = None
    profile_problem: str | None = None

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> RunDefaults:
        """The defaults ``environ`` (default: this process's environment) and the config
        file it names give."""
        environ = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, reader in (
            ("judge", default_judge),
            ("metrics", default_metrics),
            ("profile", default_profile),
        ):
            try:
                values[name] = reader(environ)
            except ConfigError as exc:
                values[f"{name}_problem"] = exc.message
        return cls(**values)

    def default_judge(self) -> tuple[dict[str, Any], str] | None:
        """As :func:`default_judge` gave it when read; a problem is raised here."""
        if self.judge_problem is not None:
            raise ConfigError(self.judge_problem)
        return self.judge

    def default_metrics(self) -> list[str] | None:
        """As :func:`default_metrics` gave it when read; a problem is raised here."""
        if self.metrics_problem is not None:
            raise ConfigError(self.metrics_problem)
        return None if self.metrics is None else list(self.metrics)

    def default_profile(self) -> tuple[str, str] | None:
        """As :func:`default_profile` gave it when read; a problem is raised here."""
        if self.profile_problem is not None:
            raise ConfigError(self.profile_problem)
        return self.profile
