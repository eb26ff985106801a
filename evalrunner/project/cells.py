"""A project file as the runs it describes: one event per (target × suite) cell.

Each cell's event is built from the file (and the command line's flags, which win) and
validated by the event's own model, :class:`~evalrunner.event_schema.EventSpec`, exactly as
an event handed to ``evalrunner start`` or the deployed state machine is: the project adds
no rule of its own about metrics, judges, gates or targets. What the event's rules find is
located back in the file (``evalrunner.toml:14: metrics."Token F1".threshold: ...``) or
named by its flag (``--threshold: ...``), through the place each event field came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evalrunner import redaction
from evalrunner.event_schema import EventSpec
from evalrunner.project.matrix import MATRIX_FILES
from evalrunner.project.model import ProjectFile, ProjectOwn, gate_settings, shared_settings
from evalrunner.project.problems import file_problems, key_path, located
from evalrunner.project.source import KeyPath, ProjectError, ProjectSource, read_project
from evalrunner.run_defaults import RunDefaults
from evalrunner.targets import registry as target_registry

#: The flag that sets each event field on the command line (README "Project file").
FLAGS = {
    "iterations": "--iterations",
    "metrics": "--metric",
    "profile": "--profile",
    "plugins": "--plugin",
    "judge_metrics": "--judge-metric",
    "judge": "--judge",
    "thresholds": "--threshold",
    "fail_under": "--fail-under",
    "evaluator_options": "--evaluator-options",
    "baseline": "--baseline",
    "fail_on": "--fail-on",
    "fail_on_regression": "--fail-on-regression",
    "max_error_share": "--max-error-share",
    "max_concurrency": "--max-concurrency",
    "max_text_chars": "--max-text-chars",
    "perturbations": "--perturb",
}
#: Event fields a flag merges into, name by name (the file's other names stay).
MERGED = ("thresholds", "fail_under", "evaluator_options")
S3_PREFIX = "s3://"

#: Where an event field came from: a key path of the file, or a flag.
Place = tuple[str | int, ...] | str


@dataclass
class Overrides:
    """The command line's values: ``event`` holds each event field a flag gave (absent: not
    given); ``targets`` / ``suites`` pick cells by name (empty: all); ``output`` replaces
    the file's."""

    event: dict[str, Any] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)
    suites: list[str] = field(default_factory=list)
    output: Path | None = None
    #: ``--judge-timeout`` without ``--judge``: the timeout of the file's judge (else of the
    #: operator's default judge, as in a run of one suite)
    judge_timeout: float | None = None
    #: ``--resume RUN_ID``: continue that stopped run of the one cell picked
    resume: str | None = None


@dataclass
class Cell:
    """One run of the matrix: a target on a suite, its event and its report folder."""

    target: str
    suite: str
    #: the suite as the file wrote it (a path or s3://...)
    source: str
    #: the local file the run reads (an s3:// suite's after :func:`fetch_s3_suites`)
    suite_path: Path
    event: dict[str, Any]
    out_dir: Path

    @property
    def label(self) -> str:
        return f"{self.target} × {self.suite}"


@dataclass
class Project:
    """A project file read, validated and expanded into its cells."""

    source: ProjectSource
    model: ProjectOwn
    output: Path
    cells: list[Cell]

    @property
    def path(self) -> Path:
        return self.source.path


def load_project(
    path: Path, overrides: Overrides | None = None, defaults: RunDefaults | None = None
) -> Project:
    """Read the project file at ``path``, apply ``overrides`` and return its cells, each
    event valid; every problem of the file is reported in one :class:`ProjectError`.
    ``defaults``: the operator's default judge and metrics (None: read them now)."""
    overrides = overrides or Overrides()
    source = read_project(path)
    raw = source.data
    if not isinstance(raw, dict):
        raise ProjectError(
            f"{source.name}: must be a table of keys (targets, suites, metrics, gates, ...), "
            f"got {type(raw).__name__}"
        )
    declared = raw.get("targets")  # registered before any message can echo a credential
    for target in declared.values() if isinstance(declared, dict) else []:
        redaction.register_event({"target": target})
    redaction.register_event({"judge": raw.get("judge")})
    folder = source.path.parent
    try:
        model = ProjectFile.model_validate(raw)
    except ValidationError as exc:  # with the suite files missing: every problem at once
        suites = raw.get("suites")
        missing = [
            _missing_suite(source, name, written)
            for name, written in (suites.items() if isinstance(suites, dict) else [])
            if isinstance(written, str)
        ]
        problems = file_problems(exc, source) + [m for m in missing if m]
        raise ProjectError("\n".join(problems)) from None
    problems = _conflicts(source, raw) + _folder_clashes(source, model)
    targets = _picked(list(model.targets), overrides.targets, "--target", "targets", source)
    suites = _picked(list(model.suites), overrides.suites, "--suite", "suites", source)
    output = overrides.output or folder / model.output
    suite_paths = {}
    for name in suites:
        written = model.suites[name]
        if written.startswith(S3_PREFIX):
            problems += _s3_problems(source, name, written)
            suite_paths[name] = Path(written.rsplit("/", 1)[-1])
            continue
        local = folder / written
        problem = _missing_suite(source, name, written)
        if problem:
            problems.append(problem)
        suite_paths[name] = local
    if problems:
        raise ProjectError("\n".join(problems))
    defaults = RunDefaults.read() if defaults is None else defaults
    cells = []
    found: list[tuple[str, str]] = []
    for target in targets:
        for suite in suites:
            event, places = _event(
                source, raw, model, target, suite, suite_paths[suite], overrides, defaults
            )
            cells.append(
                Cell(
                    target=target,
                    suite=suite,
                    source=model.suites[suite],
                    suite_path=suite_paths[suite],
                    event=event,
                    out_dir=output / target / suite,
                )
            )
            found += [
                (p, cells[-1].label) for p in _event_problems(event, places, source, defaults)
            ]
    _raise_cell_problems(found, len(cells))
    return Project(source=source, model=model, output=output, cells=cells)


def _raise_cell_problems(found: list[tuple[str, str]], cells: int) -> None:
    """Each distinct problem once; one that only some cells have names them."""
    by_line: dict[str, list[str]] = {}
    for line, label in found:
        by_line.setdefault(line, []).append(label)
    if not by_line:
        return
    lines = [
        line if len(labels) == cells else f"{line} (in {', '.join(labels)})"
        for line, labels in by_line.items()
    ]
    raise ProjectError("\n".join(lines))


def _picked(
    names: list[str], picks: list[str], flag: str, table: str, source: ProjectSource
) -> list[str]:
    unknown = [p for p in picks if p not in names]
    if unknown:
        raise ProjectError(
            f"{flag} {unknown[0]!r}: not one of the {table} of {source.name}; its {table}: "
            f"{', '.join(names)}"
        )
    return [n for n in names if n in picks] if picks else names


def _conflicts(source: ProjectSource, raw: dict[str, Any]) -> list[str]:
    """A threshold set twice (the metrics table and gates.thresholds) is refused: which one
    a run used must never depend on the order they are merged in."""
    metrics = raw.get("metrics")
    gates = (raw.get("gates") or {}).get("thresholds") or {}
    if not isinstance(metrics, dict):
        return []
    return [
        located(
            source,
            ("gates", "thresholds", name),
            f"also set as {key_path(('metrics', name, 'threshold'))}; keep one of the two",
        )
        for name, settings in metrics.items()
        if name in gates and isinstance(settings, dict) and "threshold" in settings
    ]


def _folder_clashes(source: ProjectSource, model: ProjectOwn) -> list[str]:
    """Names whose report folders would collide: two targets (or two suites) that differ only
    in case are one folder on macOS and Windows, so one cell's reports and baseline would
    overwrite the other's; a target named as a matrix file would leave the matrix summary
    unwritable after every cell ran."""
    problems = []
    for table, names in (("targets", list(model.targets)), ("suites", list(model.suites))):
        seen: dict[str, str] = {}
        for name in names:
            folded = name.casefold()
            if table == "targets" and folded in MATRIX_FILES:
                problems.append(
                    located(
                        source,
                        (table, name),
                        f"{folded} is the matrix summary's file in the output folder, so it "
                        "cannot be a target's report folder; rename the target",
                    )
                )
            elif folded in seen:
                problems.append(
                    located(
                        source,
                        (table, name),
                        f"the same report folder as {key_path((table, seen[folded]))} on a "
                        "file system that ignores case (macOS, Windows); rename one of the two",
                    )
                )
            seen.setdefault(folded, name)
    return problems


def _missing_suite(source: ProjectSource, name: str, written: str) -> str | None:
    """The problem of a local suite file that is not there (an s3:// one is read later)."""
    folder = source.path.parent
    if written.startswith(S3_PREFIX) or (folder / written).is_file():
        return None
    return located(
        source, ("suites", name), f"{written} is not a file (paths are relative to {folder})"
    )


def _s3_problems(source: ProjectSource, name: str, written: str) -> list[str]:
    bucket, _, key = written[len(S3_PREFIX) :].partition("/")
    if bucket and key and not key.endswith("/"):
        return []
    return [located(source, ("suites", name), f"{written!r} is not s3://bucket/key")]


def _event(
    source: ProjectSource,
    raw: dict[str, Any],
    model: ProjectOwn,
    target: str,
    suite: str,
    suite_path: Path,
    overrides: Overrides,
    defaults: RunDefaults,
) -> tuple[dict[str, Any], dict[tuple[str, str], Place]]:
    """One cell's event (the file's values, then the flags') and where each field came
    from, by (field, name) — name ``""`` for the whole field."""
    written = model.targets[target].as_written()
    written.setdefault("name", target)
    event: dict[str, Any] = {
        "key": f"test-suites/{suite_path.name}",
        "iterations": 1,
        "target": written,
    }
    places: dict[tuple[str, str], Place] = {
        ("key", ""): ("suites", suite),
        ("target", ""): ("targets", target),
    }
    for name, value in shared_settings(raw).items():
        event[name] = value
        places[(name, "")] = (name,)
    if "plugins" in event:  # a .py file is relative to the project file, as suites are
        event["plugins"] = [_plugin_path(p, source.path.parent) for p in event["plugins"]]
    for name, value in gate_settings(raw).items():
        event[name] = value
        places[(name, "")] = ("gates", name)
        if isinstance(value, dict):
            places.update({(name, k): ("gates", name, k) for k in value})
    selected = overrides.event.get("metrics")
    table = raw.get("metrics")
    entries = _metric_entries(table)
    if entries:
        event["metrics"] = list(entries)
        places[("metrics", "")] = places[("metric", "")] = ("metrics",)
        for index, name in enumerate(entries):  # a rule naming one metric points at its entry
            places[("metric", name)] = ("metrics", index if isinstance(table, list) else name)
    thresholds: dict[str, Any] = {}
    options: dict[str, Any] = {}
    for name, settings in entries.items():
        if selected is not None and name not in selected:
            continue  # --metric chose the evaluators: the file's others are not run
        if "threshold" in settings:
            thresholds[name] = settings["threshold"]
            places[("thresholds", name)] = ("metrics", name, "threshold")
        if "options" in settings:
            options[name] = settings["options"]
            places[("evaluator_options", name)] = ("metrics", name, "options")
    gate_thresholds = (raw.get("gates") or {}).get("thresholds") or {}
    for name, value in gate_thresholds.items():
        thresholds[name] = value
        places[("thresholds", name)] = ("gates", "thresholds", name)
    if thresholds:
        event["thresholds"] = thresholds
    if options:
        event["evaluator_options"] = options
    for name, value in overrides.event.items():
        flag = FLAGS[name]
        if name in MERGED and isinstance(value, dict):
            event[name] = {**(event.get(name) or {}), **value}
            places.update({(name, k): flag for k in value})
        else:
            event[name] = value
            places[(name, "")] = flag
            if name == "metrics":
                places[("metric", "")] = flag
    if overrides.judge_timeout is not None:
        judge = _judge_of(event, defaults)
        event["judge"] = {**judge, "timeout_seconds": overrides.judge_timeout}
        places[("judge", "timeout_seconds")] = "--judge-timeout"
    return event, places


def _judge_of(event: dict[str, Any], defaults: RunDefaults) -> dict[str, Any]:
    """The judge ``--judge-timeout`` applies to: the file's, else the operator's default."""
    judge = event.get("judge")
    if isinstance(judge, dict):
        return judge
    found = defaults.default_judge()
    if found is None or not isinstance(found[0], dict):
        raise ProjectError(
            "--judge-timeout sets the judge's per-call timeout, but no judge is configured: "
            "give --judge, or set judge in the project file, EVALRUNNER_JUDGE or the "
            "evalrunner config file"
        )
    return dict(found[0])


def _metric_entries(table: Any) -> dict[str, dict[str, Any]]:
    if isinstance(table, list):
        return {name: {} for name in table}
    return dict(table) if isinstance(table, dict) else {}


def _plugin_path(ref: str, folder: Path) -> str:
    return str((folder / ref).resolve()) if ref.endswith(".py") else ref


def _event_problems(
    event: dict[str, Any],
    places: dict[tuple[str, str], Place],
    source: ProjectSource,
    defaults: RunDefaults,
) -> list[str]:
    """What the event's own model finds in a cell's event, located where it came from."""
    redaction.register_event(event)  # a target's or judge's credential never reaches a message
    try:
        EventSpec.model_validate(event, context={"defaults": defaults})
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            if err["type"] == "event_rule":
                text = str((err.get("ctx") or {}).get("reason", err["msg"]))
                head, sep, rest = text.partition(": ")
                path = _event_path(head)
                named = re.search(r"'([^']+)'", rest)  # "metric: unknown metric 'BLEW'. ..."
                if path == ["metric"] and named and ("metric", named[1]) in places:
                    path.append(named[1])
                lines.append(_placed(path, rest, places, source) if sep else text)
            else:
                loc = list(err["loc"])
                if loc[:1] == ["target"] and len(loc) > 1 and loc[1] in target_registry.available():
                    del loc[1]  # the union's branch: users wrote targets.prod.url
                lines.append(_placed(loc, err["msg"], places, source))
        return lines
    return []


def _event_path(head: str) -> list[str | int]:
    """``thresholds.Token F1`` -> [thresholds, Token F1]; ``plugins[0]`` -> [plugins, 0];
    ``judge.openai.model`` -> [judge, openai, model]."""
    match = re.match(r"^([a-z_]+)(?:\[(\d+)\]|\.(.+))?(.*)$", head)
    if match is None:
        return [head]
    name, index, sub, tail = match.groups()
    out: list[str | int] = [name]
    if index is not None:
        out.append(int(index))
    if sub is not None:  # a metric's name may hold dots; the judge's keys never do
        out.extend(sub.split(".") if name == "judge" else [sub])
    return [*out, tail] if tail else out


def _placed(
    path: list[str | int], message: str, places: dict[tuple[str, str], Place], source: ProjectSource
) -> str:
    """``message`` about the event field at ``path``, said where the value came from."""
    field_name = str(path[0]) if path else ""
    sub = str(path[1]) if len(path) > 1 else ""
    place = places.get((field_name, sub))
    rest: KeyPath = path[2:]
    if place is None and "." in sub:  # "judge.openai.model": a place for a part of it?
        parts = sub.split(".")
        for n in range(len(parts) - 1, 0, -1):
            if (field_name, ".".join(parts[:n])) in places:
                place, rest = places[(field_name, ".".join(parts[:n]))], [*parts[n:], *path[2:]]
                break
        else:  # the keys below the field, as the file nests them
            place, rest = places.get((field_name, "")), [*parts, *path[2:]]
    if place is None:
        place = places.get((field_name, ""))
        rest = path[1:]
    if place is None:
        return f"{source.name}: {key_path(path) or 'event'}: {message}"
    if isinstance(place, str):  # a flag's value
        return f"{place}: {message}"
    return located(source, [*place, *rest], message)


def fetch_s3_suites(project: Project, scratch: Path, client: Any = None) -> None:
    """Download each s3:// suite the project's cells read into ``scratch`` (a folder per
    suite, the object's own file name) with this machine's AWS credentials, and point the
    cells at the copies. ``client``: an S3 client (default: boto3's, made here)."""
    from botocore.exceptions import BotoCoreError, ClientError

    fetched: dict[str, Path] = {}
    for cell in project.cells:
        if not cell.source.startswith(S3_PREFIX):
            continue
        if cell.suite not in fetched:
            if client is None:
                import boto3

                client = boto3.client("s3")
            bucket, _, key = cell.source[len(S3_PREFIX) :].partition("/")
            dest = scratch / cell.suite / key.rsplit("/", 1)[-1]
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                client.download_file(bucket, key, str(dest))
            except (BotoCoreError, ClientError) as exc:
                raise ProjectError(
                    located(
                        project.source,
                        ("suites", cell.suite),
                        f"cannot read {cell.source} ({exc}); check the bucket, the key and "
                        "your AWS credentials (AWS_PROFILE)",
                    )
                ) from None
            fetched[cell.suite] = dest
        cell.suite_path = fetched[cell.suite]
