"""The Markdown summary of a run for CI pages (``--markdown FILE``, and appended to
``$GITHUB_STEP_SUMMARY`` when that is set): verdict, gates, regression, primary metrics,
top problems.

From a Jinja2 template like every other report. Markdown is not HTML, so the template
environment is its own: every ``{{ value }}`` passes :func:`md_text` on its way out, which
escapes what HTML would read (GitHub renders inline HTML in Markdown) and the Markdown
punctuation that would start a link, emphasis, a code span or a new table cell, and folds line
breaks, so an answer or a case id cannot rewrite the page.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from evalrunner.reports.summary import RunSummary
from evalrunner.reports.views.formatting import pct, score

#: How many problems the summary lists (problems.json has them all).
MARKDOWN_PROBLEMS = 5

#: Inline Markdown anywhere in a value; block markers only where a value starts (a list item
#: or heading cannot start mid-line).
_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")
_LEADING = re.compile(r"^([#+-])")
_BREAKS = re.compile(r"\s*[\r\n]+\s*")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def md_text(value: Any) -> str:
    """A value as inert Markdown text on one line (None: nothing)."""
    if value is None:
        return ""
    text = _CONTROL.sub("\ufffd", _BREAKS.sub(" ", str(value)))
    escaped = _PUNCTUATION.sub(r"\\\1", html.escape(text, quote=False))
    return _LEADING.sub(r"\\\1", escaped)


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("evalrunner.reports", "templates"),
        autoescape=False,  # Markdown, escaped by md_text in finalize, not HTML
        undefined=StrictUndefined,
        finalize=md_text,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(score=score, pct=pct)
    return env


def markdown_summary(summaries: Sequence[RunSummary]) -> str:
    """The Markdown for one or more runs (one section each)."""
    template = _environment().get_template("summary.md.j2")
    return "\n".join(
        template.render(
            summary=s,
            verdict=s.verdict,
            answered=s.answered_runs(),
            primary=[m for m in s.metrics if m.primary],
            problems=s.problems[:MARKDOWN_PROBLEMS],
            high=sum(p.severity == "high" for p in s.problems),
        )
        for s in summaries
    )


__all__ = ["MARKDOWN_PROBLEMS", "markdown_summary", "md_text"]
