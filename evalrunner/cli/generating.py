"""``evalrunner generate``: documents in, a validated suite xlsx out (see
:mod:`evalrunner.generate`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from evalrunner.cli.common import EXIT_INPUT, EXIT_RUN, JudgeOption, _fail, _json_arg, err, out
from evalrunner.errors import ConfigError, EvalRunnerError


def _counts(values: list[str] | None) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values or []:
        name, sep, number = value.partition("=")
        if not sep or not number.strip().isdigit():
            raise ConfigError(f"--count {value!r}: expected KIND=N, e.g. --count fact=3")
        counts[name.strip()] = int(number)
    return counts


def _judge(value: str | None) -> Any:
    from pydantic import ValidationError

    from evalrunner.judge.config import JudgeConfig
    from evalrunner.judge.factory import build_judge
    from evalrunner.launch import judge_cache_dir

    if not value:
        raise ConfigError(
            "--judge is required: generation writes the cases with the judge LLM, e.g. "
            '--judge \'{"openai": {"base_url": "http://localhost:8000/v1", "model": "m"}}\''
        )
    raw = _json_arg(value, "--judge")
    if isinstance(raw, dict) and raw.get("cache", True) and "cache_dir" not in raw:
        raw = {**raw, "cache_dir": str(judge_cache_dir())}
    try:
        return build_judge(JudgeConfig.model_validate(raw))
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"--judge: {problems}") from None


def _embedder() -> tuple[Any, str]:
    """The local embedding model for topics, groundedness and duplicates, when installed."""
    from evalrunner.models import ModelRole, ModelUnavailable, default_model
    from evalrunner.models.hub import tool_encoder

    name = default_model(ModelRole.EMBEDDING)
    try:
        return tool_encoder(name).embed, name
    except ModelUnavailable as exc:
        return None, f"none ({exc.message})"


def generate(
    source: Annotated[
        str,
        typer.Argument(
            help="A folder of documents (txt, md, html, pdf, docx) or s3://bucket/prefix/."
        ),
    ],
    out_file: Annotated[Path, typer.Option("--out", help="The suite to write (.xlsx).")] = Path(
        "generated-suite.xlsx"
    ),
    judge: JudgeOption = None,
    count: Annotated[
        list[str] | None,
        typer.Option(
            help="KIND=N cases per topic (fact, multi-hop, reasoning, comparison, "
            "unanswerable) or per suite (unrelated, jailbreak); repeatable. Defaults: fact=2, "
            "multi-hop=1, reasoning=1, comparison=1, unanswerable=1, unrelated=2, jailbreak=2."
        ),
    ] = None,
    max_words: Annotated[
        int, typer.Option(min=40, max=2000, help="Words per chunk at most.")
    ] = 160,
) -> None:
    """Write a validated test suite from documents with the judge LLM.

    Chunks, topics, several kinds of case, each validated (grounded in its sources,
    answerable, not a duplicate) before it is written. Writes the suite and
    <suite>.generation.json (topics, rejections, judge cost)."""
    from evalrunner.generate.build import generate as build_suite
    from evalrunner.generate.build import parse_counts
    from evalrunner.generate.documents import load_documents
    from evalrunner.suite.template import write_suite_xlsx

    try:
        if out_file.suffix.lower() != ".xlsx":
            raise ConfigError(
                f"--out {out_file}: the suite is an .xlsx file, e.g. --out suite.xlsx"
            )
        counts = parse_counts(_counts(count))
        client = _judge(judge)
        # Documents first: one refused (a link out of the folder, over the size limit) stops
        # the command before the embedding model is loaded (seconds, half a GB).
        documents = load_documents(source)
        embed, model = _embedder()
        rows, report = build_suite(
            source, client, counts=counts, embed=embed, max_words=max_words, documents=documents
        )
    except EvalRunnerError as exc:
        raise _fail(exc, EXIT_INPUT) from None
    if not rows:
        err.print(
            "[bold red]error:[/] no case passed validation (rejected: "
            f"{escape(json.dumps(report.rejected_by_reason))}; failed asks: "
            f"{len(report.failed_asks)})"
        )
        raise typer.Exit(EXIT_RUN)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    write_suite_xlsx(out_file, rows)
    sidecar = out_file.with_suffix(".generation.json")
    sidecar.write_text(report.model_dump_json(indent=2) + "\n", "utf-8")
    out.print(
        f"{report.documents} documents, {report.chunks} chunks, {len(report.topics)} topics "
        f"({report.topic_method}; embedding model: {model})",
        markup=False,
    )
    out.print(
        f"kept {report.kept} of {report.drafted} drafted cases: {json.dumps(report.kept_by_kind)}",
        markup=False,
    )
    out.print(
        f"rejected ({report.validation_method}): {json.dumps(report.rejected_by_reason)}",
        markup=False,
    )
    for line in report.failed_asks + report.skipped_asks:
        out.print(f"  note: {line}", markup=False)
    j = report.judge
    out.print(
        f"judge {report.judge_model}: {j['calls']} calls ({j['cached']} cached), "
        f"{j['input_tokens']} input + {j['output_tokens']} output tokens",
        markup=False,
    )
    out.print(f"wrote {out_file} and {sidecar}", markup=False)
