"""A monitor that masks personal names (an NER model) spends that time in its function every
run: ``evalrunner estimate --monitor-per-day ... --mask-names`` counts it, at the per-KB rate
bench/bench_pii_mask.py --names measured."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from evalrunner.cli import app
from evalrunner.estimate.monitor import (
    MASK_NAMES_MS_PER_KB,
    DeployedLimits,
    estimate_monitor,
)
from tests.unit.estimate.test_monitor_estimate import JUDGE, METRICS, event, sample, write_sample


def test_names_add_their_masking_time_to_the_monitor_function() -> None:
    day = dict(per_day=100_000, share=0.05, runs_per_day=24)
    plain = estimate_monitor(event(), sample(), **day)
    names = estimate_monitor(event(), sample(), mask_names=True, **day)
    seconds = plain.interactions_per_run * plain.bytes_per_interaction / 1024
    seconds *= MASK_NAMES_MS_PER_KB / 1000
    memory_gb = DeployedLimits().monitor_memory_mb / 1024
    added = names.monitor.monitor_gb_seconds - plain.monitor.monitor_gb_seconds
    assert abs(added - seconds * memory_gb * 24) < 0.2
    assert names.aws_cost_per_day > plain.aws_cost_per_day and names.fits
    assert any("names masked" in note for note in names.notes)
    assert plain.run == names.run  # the runs themselves cost the same


def test_the_cli_takes_mask_names(tmp_path) -> None:
    suite = write_sample(tmp_path / "interactions.json")
    args = ["estimate", "--suite", str(suite), "--judge", json.dumps(JUDGE)]
    args += [a for m in METRICS for a in ("--metric", m)]
    args += ["--monitor-per-day", "100000", "--sample", "5%", "--json"]
    plain = json.loads(CliRunner().invoke(app, args).output)
    result = CliRunner().invoke(app, [*args, "--mask-names"])
    assert result.exit_code == 0, result.output
    names = json.loads(result.output)
    assert names["monitor"]["monitor_gb_seconds"] > plain["monitor"]["monitor_gb_seconds"]
