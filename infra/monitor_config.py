"""cdk.json ``monitor``: the scheduled monitor of production traffic (issue 34) — where the
logs are, how often it runs, what it masks, where its signals go, which drops alarm, and how
long its stored copies are kept. Validated with the rest of the configuration before any
construct is made (``infra/config.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalrunner.event_rules import MONITOR_SUITE_PREFIX
from evalrunner.privacy import pii_options
from evalrunner.privacy_names import label_problem
from evalrunner.signals.series import monitor_suite_label
from evalrunner.signals.settings import (
    DEFAULT_NAMESPACE,
    ENV_NAMESPACE,
    ENV_TEXT_CHARS,
    ENV_WORST,
)
from evalrunner.targets.spec import NAME_PATTERN
from infra.ner_image import MODEL_IN_IMAGE

#: Where relative paths of cdk.json are read from (infra/config.py's CONFIG_ROOT).
CONFIG_ROOT = Path(__file__).resolve().parent.parent

SCHEDULE_EXPRESSION = re.compile(r"^(rate|cron)\(.+\)$")
#: s3://bucket/prefix: an S3 bucket name and an optional key prefix.
SOURCE = re.compile(r"^s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(/[^*?]*)?$")
KMS_KEY_ARN = re.compile(r"^arn:aws[a-zA-Z-]*:kms:[a-z]{2}(-[a-z]+)+-\d:\d{12}:key/[0-9a-f-]{36}$")
#: The schedule's event may carry these monitor options (``lambdas/monitor.py``); ``source``
#: is the function's environment, ``name`` the monitor's own.
EVENT_FIELDS = frozenset(
    {"format", "mapping", "sample", "seed", "lateness", "since", "metrics", "judge"}
)
#: Where the monitor keeps its watermark in the run bucket (``evalrunner.monitor.watermark``).
WATERMARK_PREFIX = "monitor/"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MonitorPii(_Model):
    """Masking of production text before any judge sees it (on by default). The options
    are :class:`evalrunner.privacy.PiiOptions`'; with PERSON (names), ``ner_model`` is the
    spaCy pipeline's folder, which the monitor then deploys with as a container image
    (:mod:`infra.ner_image`): spaCy does not fit the zip Lambda beside the layer."""

    enabled: bool = True
    kinds: list[str] | None = None
    phone_regions: list[str] | None = None
    address_countries: list[str] | None = None
    #: A spaCy pipeline's folder (saved with ``nlp.to_disk``, or an installed model
    #: package's folder), relative to the repository; built into the monitor's image.
    ner_model: str | None = None
    ner_labels: dict[str, str] | None = None

    @model_validator(mode="after")
    def _options(self) -> MonitorPii:
        options = pii_options(self._raw())  # a bad kind or region fails synth, naming it
        if self.ner_model is not None and self.enabled:
            folder = self.model_folder()
            if not (folder / "config.cfg").is_file():
                raise ValueError(
                    f"ner_model {self.ner_model!r}: {folder} is not a spaCy pipeline's folder "
                    "(no config.cfg). Deployed, the model is built into the monitor's container "
                    "image, so give its folder: one saved with nlp.to_disk, or an installed "
                    "package's (python -c 'import en_core_web_sm as m; print(m.__path__[0])' "
                    "then the folder inside it holding config.cfg)"
                )
            if not set(options.kinds) & set(options.ner_labels.values()):
                raise ValueError(
                    "ner_model is set but no kind it finds is masked: add PERSON (or the "
                    "kind its ner_labels map to) to kinds, or leave ner_model out"
                )
            # the function would refuse it on every invocation, after an image build
            wanted = {k: v for k, v in options.ner_labels.items() if v in options.kinds}
            known = _saved_labels(folder)
            problem = None if known is None else label_problem(self.ner_model, known, wanted)
            if problem is not None:
                raise ValueError(problem)
        return self

    def _raw(self, model: str | None = None) -> dict[str, Any]:
        raw: dict[str, Any] = {}
        for key in ("kinds", "phone_regions", "address_countries", "ner_labels"):
            if getattr(self, key) is not None:
                raw[key] = getattr(self, key)
        if self.ner_model is not None:
            raw["ner_model"] = model or self.ner_model
        return raw

    def model_folder(self) -> Path:
        """``ner_model`` as an absolute folder (relative paths: from the repository)."""
        assert self.ner_model is not None
        path = Path(self.ner_model).expanduser()
        return (path if path.is_absolute() else CONFIG_ROOT / path).resolve()

    def with_names(self) -> bool:
        """Whether the deployed monitor runs an NER model (and so is a container image)."""
        return self.enabled and self.ner_model is not None

    def env_value(self) -> str:
        """EVALRUNNER_MONITOR_PII (:func:`evalrunner.privacy.masker_from_env`); the model
        named where the image holds it."""
        if not self.enabled:
            return "off"
        model = MODEL_IN_IMAGE if self.with_names() else None
        return json.dumps(self._raw(model), separators=(",", ":"))


class MonitorSignals(_Model):
    """Where Aggregate puts a monitor run's series and what its notification lists."""

    namespace: str = Field(default=DEFAULT_NAMESPACE, pattern=r"^[A-Za-z0-9._/#:-]{1,255}$")
    worst: int = Field(default=5, ge=0, le=20)
    text_chars: int = Field(default=300, ge=40, le=2000)

    def env(self) -> dict[str, str]:
        return {
            ENV_NAMESPACE: self.namespace,
            ENV_WORST: str(self.worst),
            ENV_TEXT_CHARS: str(self.text_chars),
        }


class MonitorAlarms(_Model):
    """Alarms on a drop of a metric's pass rate below its trailing baseline.

    CloudWatch anomaly detection, not a metric-math threshold: the baseline is learned from
    the series' own history (up to two weeks, with its hour-of-day and day-of-week pattern,
    which production traffic has) and the alarm fires only when the pass rate falls below
    the band, so no per-metric number has to be chosen and kept up to date. Metric math has
    no trailing-window function an alarm can evaluate over a sparse series (one point per
    monitor run), which is what a hand-made baseline would need. The price: a new series
    has no band until the model has seen enough of it; until then the alarm stays in
    INSUFFICIENT_DATA and does not fire.
    """

    #: The metrics whose pass rate is watched (names as the reports show them).
    metrics: list[str] = Field(default_factory=list)
    #: Width of the expected band, in standard deviations (smaller: more alarms).
    band: float = Field(default=2.0, gt=0, le=10)
    #: The alarm's period; one monitor run puts one point, so match the schedule.
    period_minutes: int = Field(default=60, ge=1, le=1440)
    #: Consecutive periods below the band before the alarm fires.
    evaluation_periods: int = Field(default=1, ge=1, le=24)

    @field_validator("period_minutes")
    @classmethod
    def _period(cls, value: int) -> int:
        if value not in (1, 5, 10, 30) and value % 60:
            raise ValueError("CloudWatch alarm periods are 1, 5, 10, 30 or a multiple of 60")
        return value


class MonitorConfig(_Model):
    """cdk.json ``monitor``: one scheduled monitor of a production log prefix."""

    name: str = Field(pattern=NAME_PATTERN, description="the monitor's name and report folder")
    source: str = Field(description="s3://bucket/prefix where production logs are written")
    #: The KMS key the source bucket encrypts with (SSE-KMS); null: S3-managed keys.
    source_kms_key_arn: str | None = None
    #: s3://bucket/prefix where Bedrock stores invocation bodies over 100 KB apart (the
    #: logging configuration's largeDataDeliveryS3Config); the role may read them there.
    #: null: no grant beyond ``source``'s (keep the bodies outside it: its listing reads
    #: every log-named file there).
    large_bodies: str | None = None
    schedule: str = "rate(1 hour)"
    timezone: str = "UTC"
    enabled: bool = True
    #: Further options of every scheduled run (sample, metrics, lateness, format, ...).
    event: dict[str, Any] = Field(default_factory=dict)
    pii: MonitorPii = Field(default_factory=MonitorPii)
    signals: MonitorSignals = Field(default_factory=MonitorSignals)
    alarms: MonitorAlarms = Field(default_factory=MonitorAlarms)
    #: Days the stored copies of production text are kept: the suites the monitor writes
    #: (masked interactions) and the monitor's reports.
    retention_days: int = Field(default=90, ge=1)
    memory_mb: int = Field(default=3008, ge=512, le=10240)
    timeout_minutes: int = Field(default=15, ge=1, le=15)

    @field_validator("source", "large_bodies")
    @classmethod
    def _source(cls, value: str | None) -> str | None:
        if value is not None and not SOURCE.match(value):
            raise ValueError(
                f"{value!r} is not an S3 location like s3://my-logs/AWSLogs/ (no wildcards)"
            )
        return value

    @field_validator("source_kms_key_arn")
    @classmethod
    def _key(cls, value: str | None) -> str | None:
        if value is not None and not KMS_KEY_ARN.match(value):
            raise ValueError(
                f"{value!r} is not a KMS key ARN like arn:aws:kms:REGION:ACCOUNT:key/ID"
            )
        return value

    @field_validator("schedule")
    @classmethod
    def _schedule(cls, value: str) -> str:
        if not SCHEDULE_EXPRESSION.match(value.strip()):
            raise ValueError(
                f"{value!r} is not a recurring schedule: use rate(1 hour) or cron(0 * * * ? *)"
            )
        return value.strip()

    @field_validator("event")
    @classmethod
    def _event(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(set(value) - EVENT_FIELDS)
        if unknown:
            raise ValueError(
                f"unknown monitor option(s) {', '.join(map(repr, unknown))}; use "
                f"{', '.join(sorted(EVENT_FIELDS))} (the source and name have their own keys)"
            )
        return value

    @model_validator(mode="after")
    def _alarmed_metrics(self) -> MonitorConfig:
        from evalrunner.evaluators.registry import available

        known = {spec.name for cls in available().values() for spec in cls.metrics}
        unknown = [name for name in self.alarms.metrics if name not in known]
        if unknown:
            raise ValueError(
                f"alarms.metrics: {', '.join(map(repr, unknown))} is not a metric (give the "
                "metric's name as the reports show it, e.g. 'Faithfulness', 'PII in answer')"
            )
        return self

    def source_bucket(self) -> str:
        match = SOURCE.match(self.source)
        assert match is not None  # checked above
        return match.group(1)

    def source_prefix(self) -> str:
        match = SOURCE.match(self.source)
        assert match is not None
        return (match.group(2) or "/")[1:]

    def large_bodies_location(self) -> tuple[str, str] | None:
        """(bucket, prefix) of ``large_bodies``; None when not set."""
        match = SOURCE.match(self.large_bodies or "")
        return None if match is None else (match.group(1), (match.group(2) or "/")[1:])

    def run_input(self) -> dict[str, Any]:
        """What the schedule passes the monitor function each time (``mask_pii: false`` only
        when masking is turned off: it is on unless said)."""
        masking = {} if self.pii.enabled else {"mask_pii": False}
        return {"name": self.name, **self.event, **masking}

    def suite_prefix(self) -> str:
        """Where the monitor writes each run's suite (masked production text)."""
        return f"{MONITOR_SUITE_PREFIX}{self.name}/"

    def suite_label(self) -> str:
        """The Suite dimension of the monitor's series (its alarms name it)."""
        return monitor_suite_label(self.name)


def _saved_labels(folder: Path) -> set[str] | None:
    """The labels a saved spaCy pipeline's meta.json lists for its components (None: it
    lists none), read without spaCy, which synth does not need."""
    try:
        labels = json.loads((folder / "meta.json").read_text("utf-8")).get("labels")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(labels, dict) or not labels:
        return None
    return {str(label) for names in labels.values() if isinstance(names, list) for label in names}
