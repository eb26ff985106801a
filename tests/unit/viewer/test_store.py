"""Finding a run by its id: where the id says its files are (its start stamp names them), so
opening one run does not read every run's summary; any other id is still found by reading
them all."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evalrunner.viewer.source import LocalSource
from evalrunner.viewer.store import NotFound, RunStore
from tests.support.viewer_runs import load, write_run


class RecordingSource(LocalSource):
    """The real local source, noting every key it reads (to see what a lookup costs)."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.reads: list[str] = []

    def read(self, key: str) -> bytes:
        self.reads.append(key)
        return super().read(key)


@pytest.fixture
def folder(runs_folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "out"
    shutil.copytree(runs_folder, copy)
    return copy


def summaries(folder: Path) -> list[Path]:
    return sorted(folder.glob("test-reports/*/*-summary.json"))


def test_a_run_is_found_without_reading_the_other_summaries(folder: Path) -> None:
    demo = sorted(folder.glob("test-reports/evalrunner-demo-hr/*-summary.json"))[-1]
    summary, _ = load(demo)
    assert demo.name.startswith(summary.run_id[:14])  # the id starts with the files' stamp
    source = RecordingSource(folder)
    entry = RunStore(source).run(summary.run_id)
    assert entry.run_id == summary.run_id
    assert entry.prefix == demo.relative_to(folder).as_posix()[: -len("summary.json")]
    assert all(Path(key).name.startswith(summary.run_id[:14]) for key in source.reads)
    assert len(source.reads) < len(summaries(folder)) - 2
    # the same entry the runs page lists
    listed = {e.run_id: e for e in RunStore(LocalSource(folder)).runs()}
    assert listed[summary.run_id] == entry


def test_an_id_not_naming_its_files_is_found_by_reading_every_summary(folder: Path) -> None:
    run, data = load(summaries(folder)[0])
    # an id made a few seconds before the prefix was claimed (a deployed run's caller makes
    # its id), and an id of any other form
    write_run(folder, run, data, target="late", stamp="240201-000007", run_id="240201-000005-abc")
    write_run(folder, run, data, target="named", stamp="240202-000000", run_id="nightly")
    source = RecordingSource(folder)
    store = RunStore(source)
    assert store.run("240201-000005-abc").target == "late"
    assert store.run("nightly").target == "named"
    assert len({k for k in source.reads if k.endswith("summary.json")}) == len(summaries(folder))


def test_an_unknown_id_is_not_found(folder: Path) -> None:
    store = RunStore(LocalSource(folder))
    with pytest.raises(NotFound):
        store.run("240101-000000-ffffff")
    with pytest.raises(NotFound):
        store.run("../../etc/passwd")


def test_a_listed_run_keeps_its_primary_metrics_only(folder: Path) -> None:
    """Every run's entry stays in memory; the runs page shows primary metrics only."""
    demo = sorted(folder.glob("test-reports/evalrunner-demo-hr/*-summary.json"))[-1]
    summary, _ = load(demo)
    entry = RunStore(LocalSource(folder)).run(summary.run_id)
    primary = [m for m in summary.metrics if m.primary]
    assert 0 < len(primary) < len(summary.metrics)
    assert entry.metrics == primary
    assert entry.primary() == primary
