"""report.html and the leaderboard page: each ONE self-contained HTML file.

Everything is inline: the CSS (``static/report.css``), the charts (SVG whose geometry
:mod:`evalrunner.reports.views.charts` computes) and a few lines of vanilla JavaScript
(``static/report.js``: sortable tables, open every collapsible section before printing). No
library, no CDN, no font or image fetched: the file reads the same offline, attached to a
ticket, or years later.

The pages are Jinja2 templates (``templates/*.html.j2``) with autoescaping on: every string
that comes from the run (questions, answers, contexts, reasons, case ids, metric and target
names, the configuration) is escaped for text and attribute context alike, and control
characters and lone surrogates (which HTML forbids / UTF-8 cannot encode) become U+FFFD on the
way out. Nothing from the run is ever marked safe. As a second line of defence, a
Content-Security-Policy forbids any network fetch and any script but the page's own (pinned by
the hash of the very text inlined), so a forgotten escape still could not run an injected
script or handler.

Template sources are compacted when loaded (see :class:`_Compact`), so the templates can be
laid out readably while the page stays as small as before. Compiled templates are kept in
Jinja's bytecode cache on disk (see :func:`_bytecode_cache`), so a fresh process (a CLI run,
a cold Lambda container after the first) does not compile them again.

Section order of the run report, most decisive first: verdict, regression against the
baseline, gates, problems and insights, metrics (pass rate against threshold), score
distributions, the case × metric heatmap, the worst cases with their details, run-level
figures, configuration.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import (
    BytecodeCache,
    Environment,
    FileSystemBytecodeCache,
    PackageLoader,
    StrictUndefined,
    select_autoescape,
)
from jinja2.bccache import Bucket
from jinja2.ext import Extension
from markupsafe import Markup

from evalrunner.reports.model import Leaderboard, ReportData
from evalrunner.reports.views import charts, palette
from evalrunner.reports.views.formatting import FILTERS
from evalrunner.reports.views.leaderboard_view import LEADERBOARD_ROWS, leaderboard_context
from evalrunner.reports.views.report_view import (
    HEATMAP_ROWS,
    WORST_CASES,
    WORST_OPEN,
    report_context,
)
from evalrunner.reports.views.run_figures import scalar_text
from evalrunner.user_cache import is_private

if TYPE_CHECKING:
    from evalrunner.calibrate.agreement import Calibration

__all__ = [
    "HEATMAP_ROWS",
    "LEADERBOARD_ROWS",
    "WORST_CASES",
    "WORST_OPEN",
    "render_leaderboard",
    "render_report",
]

_UNSAFE_CHARS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
#: A line break (and the indentation after it) beside a tag or a template delimiter.
_LAYOUT = re.compile(r"(?<=[>}])[ \t]*\n\s*|[ \t]*\n\s*(?=[<{])")


class _Compact(Extension):
    """Drop the line breaks that only lay the template out: one beside a tag (``<…>``) or a
    template delimiter (``{{ }}``, ``{% %}``) goes, with the indentation after it. A break
    between two words stays (it reads as a space). Applied to the template *source* when it is
    loaded, never to the run's text; write ``{{ " " }}`` where a space must join two lines."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        return _LAYOUT.sub("", source)


def _finalize(value: Any) -> Any:
    """Every ``{{ value }}`` on its way out: None prints as nothing, and control characters
    and lone surrogates become U+FFFD before autoescaping (markup from macros passes)."""
    if value is None:
        return ""
    if isinstance(value, Markup):
        return value
    return _UNSAFE_CHARS.sub("\ufffd", str(value))


def _static(name: str) -> str:
    return resources.files("evalrunner.reports").joinpath("static", name).read_text("utf-8")


#: Where compiled templates are kept: a folder, or ``off``. Unset: Jinja's own per-user
#: folder under the temporary directory (created private, and refused unless it is).
TEMPLATE_CACHE_ENV = "EVALRUNNER_TEMPLATE_CACHE"


class _TemplateCache(FileSystemBytecodeCache):
    """Jinja's file cache of compiled templates, keyed also by how this module compiles them.

    Jinja checks each template's source, but not the environment that compiled it: the
    compaction above, autoescaping and ``finalize`` are part of the compiled code, so the key
    holds a hash of this file and Jinja's version, and an edit here never reads old code.
    A cache that cannot be written costs a compile, never the report."""

    def __init__(self, directory: str | None, fingerprint: str) -> None:
        super().__init__(directory)
        self._fingerprint = fingerprint

    def get_cache_key(self, name: str, filename: str | None = None) -> str:
        return super().get_cache_key(f"{self._fingerprint}|{name}", filename)

    def dump_bytecode(self, bucket: Bucket) -> None:
        try:
            super().dump_bytecode(bucket)
        except OSError as exc:
            logging.getLogger(__name__).debug("compiled template not cached: %s", exc)


def _bytecode_cache() -> BytecodeCache | None:
    """The cache of compiled templates (see :data:`TEMPLATE_CACHE_ENV`), or None when it is
    turned off or no safe folder can be had. Compiling the report's templates is some 0.25 s
    of CPU, a fifth of a 2,000-case Aggregate in a fresh process; reading them back is 5 ms."""
    setting = os.environ.get(TEMPLATE_CACHE_ENV, "").strip()
    if setting.lower() in ("off", "0", "false", "no"):
        return None
    try:
        here = Path(__file__).read_bytes()
        fingerprint = hashlib.sha256(here + jinja2.__version__.encode()).hexdigest()[:16]
        if setting:
            os.makedirs(setting, mode=0o700, exist_ok=True)
            if not is_private(setting):
                return None
        return _TemplateCache(setting or None, fingerprint)
    except (OSError, RuntimeError) as exc:  # RuntimeError: Jinja found no safe folder
        logging.getLogger(__name__).debug("templates compiled without a cache: %s", exc)
        return None


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("evalrunner.reports", "templates"),
        bytecode_cache=_bytecode_cache(),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        finalize=_finalize,
        extensions=[_Compact],
    )
    env.filters.update(FILTERS)
    env.filters["scalar_text"] = scalar_text
    script = _static("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    env.globals.update(
        # package files, not run data: trusted, inlined as they are
        css=Markup(_static("report.css")),
        script=Markup(script),
        # no fetch of anything; only the page's own script (by hash) runs; inline styles allowed
        csp=(
            "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
            f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
        ),
        css_variables=palette.CSS_VARIABLES,
        palette=palette,
        ramp=charts.ramp(),
    )
    return env


def page_policy() -> str:
    """The Content-Security-Policy the pages rendered here are written for (their inline style
    and their one script, by hash; nothing remote): what a server of these pages sends."""
    return str(_environment().globals["csp"])


def render_report(data: ReportData) -> str:
    """The run's report.html: one self-contained page, decisive facts first."""
    return _environment().get_template("report.html.j2").render(report_context(data))


def render_leaderboard(board: Leaderboard) -> str:
    """A comparison of targets on one suite: one self-contained page."""
    return _environment().get_template("leaderboard.html.j2").render(leaderboard_context(board))


def render_history(context: Mapping[str, Any]) -> str:
    """A target's runs over time: one self-contained page, from the context
    :func:`evalrunner.reports.writers.history.history_context` builds (the history module calls
    this renderer, so the renderer does not import it back)."""
    return _environment().get_template("history.html.j2").render(context)


def render_calibration(result: Calibration) -> str:
    """calibration.html: a run's metrics against human verdicts, one self-contained page."""
    from evalrunner.reports.views.calibration_view import calibration_context

    return _environment().get_template("calibration.html.j2").render(calibration_context(result))


def render_workflow(context: Mapping[str, Any]) -> str:
    """workflow.html: each step of ``evalrunner workflow`` with its verdict and its reports,
    and the artifacts, from the context :mod:`evalrunner.workflow.report` builds."""
    return _environment().get_template("workflow.html.j2").render(context)
