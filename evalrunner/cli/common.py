"""What every ``evalrunner`` command shares: the Typer app, the consoles, the exit codes, the
options several commands take, and the checks that refuse bad input before anything starts."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
from rich.progress import Progress as Bar

from evalrunner.errors import ConfigError, EvalRunnerError, EventError
from evalrunner.fail_on import FailOn

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Regression testing for RAG and LLM agents, locally or on AWS Step Functions. "
    "Exit codes: 0 passed; 1 failed (a gate, a case below a primary metric's threshold, or a "
    "regression, as --fail-on says); 2 bad input, nothing started; 3 the run failed or was "
    "stopped (partial), or its reports could not be written; 4 not measured (no target call "
    "succeeded, or too many errors: --max-error-share); 5 pre-flight failed: the target or "
    "judge is unreachable, refused the key or answered in a shape that cannot be read, nothing "
    "spent.",
)
out = Console()
err = Console(stderr=True)

EXIT_GATE, EXIT_INPUT, EXIT_RUN, EXIT_NO_ANSWER = 1, 2, 3, 4
#: Pre-flight failed (evalrunner.preflight): nothing was run or spent.
EXIT_PREFLIGHT = 5
DEFAULT_OUT = Path("evalrunner-out")


def _fail(exc: EvalRunnerError, code: int) -> typer.Exit:
    """Print the error whole (its fix comes last, so nothing is cut) and exit ``code``.

    Every message is escaped for Rich here: ``pip install 'evalrunner[models]'`` or a
    ``[high]`` in a message is text, never markup that would swallow it."""
    err.print(f"[bold red]error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
    return typer.Exit(code)


def _json_arg(value: str, what: str) -> Any:
    """A JSON literal, or the path of a file holding one."""
    text = value
    path = Path(value)
    if not value.lstrip().startswith(("{", "[")) and path.is_file():
        text = path.read_text("utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EventError(f"{what}: neither valid JSON nor a readable JSON file ({exc})") from exc


def judge_metrics_arg(values: list[str] | None) -> list[Any]:
    """The ``--judge-metric`` values: each a JSON object or list of objects, or a file of
    one; the event's ``judge_metrics`` validates what they declare."""
    declared: list[Any] = []
    for value in values or []:
        parsed = _json_arg(value, "--judge-metric")
        declared += parsed if isinstance(parsed, list) else [parsed]
    return declared


def _pairs(values: list[str] | None, option: str) -> dict[str, float]:
    pairs: dict[str, float] = {}
    for value in values or []:
        name, sep, number = value.rpartition("=")
        try:
            if not sep or not name:
                raise ValueError
            parsed = float(number)
            if not math.isfinite(parsed):
                raise ValueError
            pairs[name.strip()] = parsed
        except ValueError:
            raise EventError(
                f"{option} {value!r}: expected METRIC=NUMBER with a finite number (not NaN "
                f"or Infinity), e.g. {option} 'ROUGE-L=0.4'"
            ) from None
    return pairs


def check_out_dir(out_dir: Path, where: str = "--out", example: str = "--out reports/") -> None:
    """Refuse an ``--out`` that cannot hold the reports before anything runs (a file, a
    folder inside a file, a folder this user cannot write), instead of calling every target
    and failing at the last step. Creates nothing: bad input leaves nothing behind.
    ``where`` / ``example``: what gave the folder (a project file's ``output`` key)."""
    path = out_dir
    while not path.exists():
        if path.parent == path:
            break
        path = path.parent
    if path.exists() and not path.is_dir():
        what = "is a file" if path == out_dir else f"is inside {path}, which is a file"
        raise ConfigError(f"{where}: {out_dir} {what}; give a folder, e.g. {example}")
    if path.exists() and not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{where}: {path} is not writable by this user; give a folder you can write to"
        )


def _progress_bar() -> tuple[Bar, Any]:
    bar = Bar(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("errors: {task.fields[errors]}"),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    )
    task = bar.add_task("running cases", total=None, errors=0)
    return bar, task


ProfileOption = Annotated[
    str | None,
    typer.Option(
        help="A named set of metrics and thresholds: seed-003 (the seed runner's nine "
        "metrics at DeepEval's default threshold 0.5); --metric and --threshold add to it."
    ),
]

JudgeOption = Annotated[
    str | None,
    typer.Option(
        help="The LLM judge for judge metrics, as JSON or a file: "
        '{"openai": {"base_url": "...", "model": "..."}} or {"bedrock": {"model_id": "..."}}. '
        "Without it, judge metrics are skipped with a reason."
    ),
]

JudgeTimeoutOption = Annotated[
    float | None,
    typer.Option(
        min=0.1,
        max=3600,
        help="Seconds one judge call may take (judge.timeout_seconds, default 60), for the "
        "--judge given or the default judge: a small model on a CPU writes a few tokens per "
        "second, and a queued call waits for the ones before it.",
    ),
]

FunctionTimeoutOption = Annotated[
    float | None,
    typer.Option(
        min=1,
        help="Seconds one pipeline function (a task of cases) may run locally before the run "
        "is stopped as Lambda would stop it (default: no limit locally; deployed, Lambda's "
        "900 s).",
    ),
]


def judge_arg(judge: str | None, timeout: float | None) -> Any:
    """The event's judge: ``--judge`` (JSON or a file) with ``--judge-timeout`` set in it;
    with only ``--judge-timeout``, the default judge (EVALRUNNER_JUDGE or the config file)
    with it set, made the event's own. None: the event names no judge."""
    value = _json_arg(judge, "--judge") if judge else None
    if timeout is None:
        return value
    if value is None:
        from evalrunner.run_defaults import default_judge

        found = default_judge()
        if found is None:
            raise EventError(
                "--judge-timeout sets the judge's per-call timeout, but no judge is configured: "
                "give --judge, or set EVALRUNNER_JUDGE or the evalrunner config file's judge"
            )
        value = found[0]
    if not isinstance(value, dict):
        raise EventError("--judge: must be a JSON object to take --judge-timeout")
    return {**value, "timeout_seconds": timeout}


NoPreflight = Annotated[
    bool,
    typer.Option(
        "--no-preflight",
        help="Skip the pre-flight: one call to the target and, when judge metrics run, one to "
        "the judge before the suite, which stop a run whose endpoint is down, whose key is "
        "refused or whose response cannot be read (exit 5, nothing spent). Local runs only: "
        "start --aws makes none (the deployed runner's network is not this machine's; "
        "check it with 'evalrunner doctor --aws').",
    ),
]

JudgeMetricOption = Annotated[
    list[str] | None,
    typer.Option(
        help='A named judge metric as JSON (or a file), e.g. {"kind": "geval", "name": '
        '"Politeness", "criteria": "...", "evaluation_params": ["input", '
        '"actual_output"], "threshold": 0.7}; a list declares several (repeatable).'
    ),
]
FailUnderOption = Annotated[
    list[str] | None,
    typer.Option(help="Gate METRIC=VALUE: exit 1 when the metric's average is below (repeatable)."),
]
ThresholdOption = Annotated[
    list[str] | None, typer.Option(help="Success threshold METRIC=VALUE (repeatable).")
]
FailOnOption = Annotated[
    FailOn | None,
    typer.Option(
        "--fail-on",
        case_sensitive=False,
        help="What fails the run (exit 1): failures (the default: a case below a primary "
        "metric's threshold, a failed target call, or a --fail-under gate), regressions (a "
        "regression against the baseline, or a gate), errors (only gates), never. Too many "
        "errors make a run not measured (exit 4) under all but never.",
    ),
]

MaxErrorShare = Annotated[
    float | None,
    typer.Option(
        "--max-error-share",
        min=0.0,
        max=1.0,
        help="Share of the target calls, or of a metric's cases, that may error before the "
        "run is not measured (exit 4) rather than passed; default 0.1.",
    ),
]

FailOnRegression = Annotated[
    bool,
    typer.Option(
        "--fail-on-regression",
        help="Exit 1 when the run is a regression against its baseline (the previous run of "
        "the same target and suite, or --baseline), whatever --fail-on says.",
    ),
]


#: ``--suite`` of ``run`` and ``estimate``: a suite file, or project suites' names.
SuitesOption = Annotated[
    list[Path] | None,
    typer.Option(
        "--suite",
        help="Suite file: .xlsx, .csv or .json. Without it, the project file "
        "(evalrunner.toml / .yaml here or in a parent folder, or --config) is used. With a "
        "project file, the name of one of its suites (repeatable), to pick those cells. A "
        "value naming an existing file is a suite file and no project file is read (unless "
        "--config is given: then every value is a suite's name).",
    ),
]
#: ``--config`` of ``run`` and ``estimate``.
ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="The project file (default: evalrunner.toml, .yaml or .yml in this folder or "
        "the nearest parent up to the repository root).",
    ),
]

PerturbOption = Annotated[
    list[str] | None,
    typer.Option(
        help="Robustness: also run every case perturbed, KIND[:INTENSITY[:SEED]], e.g. "
        "typos:0.1 or synonym (repeatable); 'evalrunner perturbations' lists the kinds."
    ),
]


def perturbation_arg(text: str) -> dict[str, Any]:
    """``--perturb KIND[:INTENSITY[:SEED]]`` as an entry of the event's perturbations (the
    event's validation checks the kind and the ranges)."""
    parts = text.split(":")
    if len(parts) > 3 or not parts[0]:
        raise EventError(
            f"--perturb: {text!r} is not KIND[:INTENSITY[:SEED]], e.g. typos:0.1 or typos:0.1:7"
        )
    entry: dict[str, Any] = {"kind": parts[0]}
    try:
        if len(parts) > 1 and parts[1]:
            entry["intensity"] = float(parts[1])
        if len(parts) > 2 and parts[2]:
            entry["seed"] = int(parts[2])
    except ValueError:
        raise EventError(
            f"--perturb: {text!r}: the intensity must be a number between 0 and 1 and the "
            "seed a whole number, e.g. typos:0.1:7"
        ) from None
    return entry


# The red team's choices, declared once for `redteam` and the workflow's red-team step.
RedteamPluginsOption = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated red-team plugins: prompt-injection, indirect-prompt-injection, "
        "jailbreak, system-prompt-extraction, pii-extraction, harmful-content, off-topic, "
        "hallucination, excessive-agency. Default: every one that applies to the target."
    ),
]
RedteamStrategiesOption = Annotated[
    str | None,
    typer.Option(
        help="Comma-separated red-team strategies, each adding a transformed copy of every "
        "attack: base64, leetspeak, rot13, language, multi-turn. Default: none."
    ),
]
