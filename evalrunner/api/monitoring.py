"""``evalrunner.monitor_logs()``: a monitor run from Python, as ``evalrunner monitor`` does it
(:mod:`evalrunner.monitor`): the interactions logged since the watermark, sampled, PII-masked,
scored with referenceless metrics in the embedded engine, each once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrunner.api.result import EvalRun
from evalrunner.api.runs import DEFAULT_OUT, _fail_on, _judge
from evalrunner.reports.verdict import FailOn

if TYPE_CHECKING:
    from evalrunner.monitor.runner import Plan
    from evalrunner.monitor.sampling import Sample
    from evalrunner.privacy import PiiMasker, PiiOptions

#: The default allowed lateness (``evalrunner.monitor.runner.DEFAULT_LATENESS_SECONDS``),
#: repeated so that ``import evalrunner`` does not load the monitor.
DEFAULT_LATENESS_SECONDS = 3600.0


@dataclass(frozen=True)
class MonitorRun:
    """A monitor run: what it found (``plan``: counts, problems of unreadable records) and
    the run that scored the new interactions (``run``; None when there was nothing new)."""

    plan: Plan
    run: EvalRun | None
    message: str | None = None


def monitor_logs(
    source: str | Path,
    *,
    out: str | Path = DEFAULT_OUT,
    format: str = "auto",
    mapping: Mapping[str, str] | None = None,
    name: str | None = None,
    since: datetime | None = None,
    sample: int | float | str | None = None,
    seed: int = 0,
    lateness_seconds: float = DEFAULT_LATENESS_SECONDS,
    metrics: Sequence[str] | None = None,
    judge: Mapping[str, Any] | str | None = None,
    thresholds: Mapping[str, float] | None = None,
    fail_on: FailOn | str | None = None,
    mask_pii: bool | PiiOptions | Mapping[str, Any] = True,
) -> MonitorRun:
    """Score what ``source`` (a file, a folder or an ``s3://`` prefix) logged since the
    monitor's watermark in ``out``; ``sample``: a count (200) or a share (0.05, "5%").
    ``mask_pii``: on with the default kinds, off, or the masking options (a
    :class:`~evalrunner.privacy.PiiOptions` or its JSON shape, as cdk.json ``monitor.pii``:
    ``{"kinds": [..., "PERSON"], "ner_model": "path/to/pipeline"}``).
    Bad input raises :class:`evalrunner.monitor.model.MonitorError` (bad masking options,
    or a missing NER model or spaCy: :class:`~evalrunner.errors.ConfigError`)."""
    # the monitor's readers load only when one is run
    from evalrunner.launch import local_event, run_local
    from evalrunner.monitor.local import run_monitor
    from evalrunner.monitor.metrics import check_metrics, default_metrics
    from evalrunner.monitor.runner import MonitorOptions
    from evalrunner.run_defaults import RunDefaults

    masker = _masker(mask_pii)  # a missing NER model fails before anything is read
    options = MonitorOptions(
        source=str(source),
        format=format,
        mapping=dict(mapping or {}),
        name=name,
        since=since,
        sample=_sample(sample),
        seed=seed,
        lateness_seconds=lateness_seconds,
    )
    judge_value = _judge(judge)
    with_judge = judge_value is not None or RunDefaults.read().judge is not None
    chosen = check_metrics(list(metrics)) if metrics else default_metrics(with_judge=with_judge)
    out_dir = Path(out)

    def event_for(suite_name: str, monitor_name: str) -> dict[str, Any]:
        return local_event(
            suite_name,
            {"logged": monitor_name},
            iterations=1,
            metrics=chosen,
            thresholds=dict(thresholds) if thresholds else None,
            judge=judge_value,
            fail_on=_fail_on(fail_on),
        )

    outcome = run_monitor(
        options,
        out_dir,
        event_for,
        lambda event, suite: run_local(event, suite, out_dir, preflight=False),
        mask_pii=masker,
    )
    run = EvalRun(outcome.result) if outcome.result is not None else None
    return MonitorRun(outcome.plan, run, outcome.message)


def _sample(value: int | float | str | None) -> Sample | None:
    from evalrunner.monitor.sampling import parse_sample

    if value is None:
        return None
    if isinstance(value, float):
        return parse_sample(repr(value))
    return parse_sample(str(value))


def _masker(value: bool | PiiOptions | Mapping[str, Any]) -> bool | PiiMasker:
    from evalrunner.privacy import PiiMasker, PiiOptions, pii_options

    if isinstance(value, bool):
        return value
    return PiiMasker(value if isinstance(value, PiiOptions) else pii_options(dict(value)))
