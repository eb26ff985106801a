"""What the terminal shows: the run's metrics readable at 80 columns and in a CI log (no
TTY), error messages whole and never eaten by Rich markup, one line for the metrics a
default run leaves out."""

from __future__ import annotations

import io

import pytest
import typer
from rich.console import Console

from evalrunner.cli import common
from evalrunner.cli.inputs import left_out_line
from evalrunner.cli.run_console import metrics_view
from evalrunner.errors import ConfigError
from tests.support.summaries import metric, run_summary

NAMES = ("Contextual Precision", "Answer Relevancy", "ROUGE-L", "Toxicity [custom]")


def summary() -> object:
    return run_summary(
        target="hr-bot-AGENT42-ALIAS7",
        metrics=[
            metric(name, evaluator=f"{name} evaluator", average=0.5, pass_rate=0.25, count=4)
            for name in NAMES
        ],
    )


def rendered(width: int, *, tty: bool) -> str:
    console = Console(
        file=io.StringIO(), width=width, force_terminal=tty, color_system=None, record=True
    )
    console.print(metrics_view(summary(), width))  # type: ignore[arg-type]
    return console.export_text()


@pytest.mark.parametrize("tty", [True, False])
def test_at_80_columns_every_metric_name_is_whole_on_its_own_line(tty: bool) -> None:
    text = rendered(80, tty=tty)
    lines = text.splitlines()
    assert all(len(line) <= 80 for line in lines), text
    assert "…" not in text
    for name in NAMES:  # names unbroken, and their numbers on the line after
        (line,) = [n for n, line in enumerate(lines) if line.startswith(f"{name} (")]
        assert "average 0.500" in lines[line + 1] and "pass rate 25%" in lines[line + 1]
        assert "4 scored, 0 skipped, 0 errored" in lines[line + 1]
    assert lines[0].startswith("hr-bot-AGENT42-ALIAS7 — ")


def test_a_wide_terminal_gets_the_table_with_every_column_whole() -> None:
    text = rendered(200, tty=True)
    header = next(line for line in text.splitlines() if "Metric" in line)
    for column in ("Evaluator", "Average", "Pass rate", "Threshold", "Skipped", "Errored"):
        assert column in header
    assert "…" not in text
    assert all(any(name in line for line in text.splitlines()) for name in NAMES)


def test_an_error_message_with_brackets_is_printed_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffer = io.StringIO()
    monkeypatch.setattr(common, "err", Console(file=buffer, width=80, color_system=None))
    message = (
        "the embedding model is not installed: pip install 'evalrunner[models]' "
        "(a [high] problem, see [link=x]here[/link])"
    )
    exit_ = common._fail(ConfigError(message), 2)
    assert isinstance(exit_, typer.Exit) and exit_.exit_code == 2
    printed = " ".join(buffer.getvalue().split())
    assert printed == f"error: {message}"


def test_the_metrics_left_out_are_one_short_line_with_a_count_and_a_pointer() -> None:
    left_out = [f"J{i}: no judge is configured (event judge, ...)" for i in range(6)]
    left_out += ["BERT Score: a model metric, run only when named", "Bias: not in the default set"]
    line = left_out_line(left_out)
    assert line == "8 metrics not run (6 need --judge, 2 need --metric); see 'evalrunner metrics'"
    assert len(line) <= 80
    assert left_out_line(left_out[-1:]) == (
        "1 metrics not run (1 need --metric); see 'evalrunner metrics'"
    )
