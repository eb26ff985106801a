"""``evalrunner redteam``: attacks written against the target's purpose by plugins, changed
by strategies, run and graded through the ordinary local pipeline (see
:mod:`evalrunner.redteam`). Its reports, verdict and exit codes are those of ``evalrunner
run``; a successful attack fails the run (exit 1)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from evalrunner.cli.common import (
    DEFAULT_OUT,
    EXIT_INPUT,
    EXIT_PREFLIGHT,
    EXIT_RUN,
    FailOnOption,
    JudgeOption,
    JudgeTimeoutOption,
    NoPreflight,
    RedteamPluginsOption,
    RedteamStrategiesOption,
    _fail,
    _json_arg,
    check_out_dir,
    err,
    judge_arg,
)
from evalrunner.errors import ConfigError, EvalRunnerError, ExecutionFailed, RunStopped


def redteam(
    target: Annotated[
        str,
        typer.Option(help="The target as JSON (or a file), as for evalrunner run --target."),
    ],
    purpose: Annotated[
        str | None,
        typer.Option(help="What the target is for (the attacks and the grading follow it)."),
    ] = None,
    suite: Annotated[
        Path | None,
        typer.Option(help="A suite whose questions the judge infers the purpose from."),
    ] = None,
    plugins: RedteamPluginsOption = None,
    strategies: RedteamStrategiesOption = None,
    num_tests: Annotated[int, typer.Option(help="Attacks per plugin.", min=1)] = 3,
    seed: Annotated[
        int, typer.Option(help="Same seed + judge cache: the same attacks and grades.")
    ] = 0,
    language: Annotated[
        str | None,
        typer.Option(help="The language strategy's language (default: one per attack by seed)."),
    ] = None,
    min_resisted: Annotated[
        float,
        typer.Option(
            help="Share of attacks that must be resisted (gate on Attack resisted); 1.0: "
            "any successful attack fails the run.",
            min=0.0,
            max=1.0,
        ),
    ] = 1.0,
    save_attacks: Annotated[
        Path | None,
        typer.Option(
            help="Also write the attack suite (JSON) here: rerun it as is with evalrunner run "
            "--plugin evalrunner.redteam.grader --metric 'Red team'."
        ),
    ] = None,
    judge: JudgeOption = None,
    judge_timeout: JudgeTimeoutOption = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Reports folder.")] = DEFAULT_OUT,
    fail_on: FailOnOption = None,
    max_concurrency: Annotated[int, typer.Option(min=1, help="Attacks in flight.")] = 10,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    no_preflight: NoPreflight = False,
) -> None:
    """Red-team a target: attacks by plugin and strategy, graded by the judge; findings
    with OWASP LLM Top 10 and AVID references in problems.json and the report."""
    from evalrunner.api.inputs import suite_file
    from evalrunner.cli.run_console import report
    from evalrunner.cli.running import _execute_local, _notes, _partial_or_fail
    from evalrunner.judge.base import JudgeError
    from evalrunner.launch import check_suite, preflight_local
    from evalrunner.preflight import PreflightFailed
    from evalrunner.redteam.api import plan, redteam_event

    try:
        check_out_dir(out_dir)
        if suite is not None and not suite.is_file():
            raise ConfigError(f"--suite: {suite} does not exist or is not a file")
        spec = _json_arg(target, "--target")
        if not isinstance(spec, dict):
            raise EvalRunnerError('--target: must be a JSON object, e.g. \'{"url": "..."}\'')
        try:
            planned = plan(
                spec,
                judge=judge_arg(judge, judge_timeout),
                purpose=purpose,
                suite=suite,
                plugins=plugins,
                strategies=strategies,
                num_tests=num_tests,
                seed=seed,
                language=language,
            )
        except KeyboardInterrupt:
            # Ctrl-C before the run starts (the judge writing the attacks) is a stopped run
            # like one inside it (exit 3), not a bare interrupt: nothing ran against the
            # target, and the judge cache keeps every answer written so far
            raise RunStopped(
                "redteam: stopped (Ctrl-C) while the judge was writing the attacks; nothing "
                "was run against the target. The judge cache keeps the attacks written so "
                "far, so rerunning the same command resumes cheaply"
            ) from None
        if save_attacks is not None:
            save_attacks.write_text(
                json.dumps(planned.rows, ensure_ascii=False, indent=1), encoding="utf-8"
            )
        if not (quiet or as_json):
            err.print(
                f"Red team: {planned.attack_count} attack(s) against the purpose "
                f"{escape(planned.purpose)!r}, written with {planned.judge_calls} judge "
                f"call(s) and {planned.judge_cached} answer(s) from the judge cache"
            )
        with tempfile.TemporaryDirectory(prefix="evalrunner-redteam-") as folder:
            path = suite_file(planned.rows, Path(folder), f"redteam-seed{seed}")
            event = redteam_event(
                path.name,
                spec,
                planned,
                min_resisted=min_resisted,
                fail_on=fail_on.value if fail_on else None,
                max_concurrency=max_concurrency,
            )
            check_suite(path, event)
            if not no_preflight:
                preflight_local(event, path)
            result = _execute_local(event, path, out_dir, quiet or as_json, preflight=False)
    except PreflightFailed as exc:
        raise _fail(exc, EXIT_PREFLIGHT) from None
    except ExecutionFailed as exc:
        result = _partial_or_fail(exc)
    except JudgeError as exc:
        raise _fail(exc, EXIT_RUN) from None
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    code = report(result, as_json=as_json)
    _notes([*planned.notes, *result.notices])
    raise typer.Exit(code)
