"""The viewer's web app (Starlette): runs, a run, a case, compare, leaderboard, labels, export.

Safe by default, because the pages show untrusted text (answers, contexts, suite cells):
every page is rendered by autoescaping Jinja templates (run text is never marked safe); the
Content-Security-Policy allows only the viewer's own files (no CDN, nothing remote, no inline
script); only the Host names of the loopback address are answered (a DNS-rebinding page
cannot reach it); every write (a label) needs the random token of this server's pages; and a
run, case or file is looked up among what the source lists, never used as a path.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from evalrunner.errors import EvalRunnerError
from evalrunner.reports.views.formatting import FILTERS
from evalrunner.viewer import labels as labelling
from evalrunner.viewer.cases import CaseQuery, categories, perturbations, query_cases, related
from evalrunner.viewer.changes import answer_changes
from evalrunner.viewer.eye import evaluation_eye
from evalrunner.viewer.loaded import LoadedRun
from evalrunner.viewer.runs import RunsQuery, filter_runs, trends
from evalrunner.viewer.source import Source, UnsafeKey
from evalrunner.viewer.store import NotFound, RunEntry, RunStore

if TYPE_CHECKING:  # the live pages' module (the run's record model) is imported when used
    from evalrunner.viewer.live import SuiteQuestions

#: Nothing remote, no inline script or style: only this server's own files.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
LOOPBACK_HOSTS = ["127.0.0.1", "localhost"]
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _finalize(value: Any) -> Any:
    return "" if value is None else value


@cache
def environment() -> Environment:
    """The viewer's templates: autoescaped, strict, with the reports' number filters."""
    env = Environment(
        loader=PackageLoader("evalrunner.viewer", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(FILTERS)
    return env


class SecurityHeaders:
    """Adds the CSP and the other hardening headers to every response that has none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                names = {name.lower() for name, _ in headers}
                for name, value in (
                    (b"content-security-policy", CSP.encode()),
                    (b"x-content-type-options", b"nosniff"),
                    (b"referrer-policy", b"no-referrer"),
                    (b"x-frame-options", b"DENY"),
                    (b"cache-control", b"no-store"),
                ):
                    if name not in names:
                        headers.append((name, value))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, with_headers)


class Viewer:
    """The routes over one store; ``token`` guards the writes.

    The pages are plain functions, which Starlette runs in its thread pool: the first open of
    a large run (parsing its report.json) does not hold up another tab or a live page's poll.
    The one write (a label) reads the form asynchronously, then adds the label to the labels
    file through :meth:`Source.update`: in a bucket a conditional write that re-reads and
    re-applies when another reviewer saved in between, so two labels saved at once cannot
    lose one."""

    def __init__(
        self, store: RunStore, token: str, questions: SuiteQuestions | None = None
    ) -> None:
        self.store = store
        self.token = token
        #: the suites of a ``run --view`` (its live page shows each finished case's question)
        self.questions = questions

    def render(self, template: str, request: Request, **context: Any) -> str:
        context.setdefault("standalone", None)
        return (
            environment()
            .get_template(template)
            .render(
                source=self.store.source.label,
                token=self.token,
                path=request.url.path,
                **context,
            )
        )

    def page(self, template: str, request: Request, status: int = 200, **context: Any) -> Response:
        return HTMLResponse(self.render(template, request, **context), status_code=status)

    # --- runs -------------------------------------------------------------------------
    def runs(self, request: Request) -> Response:
        try:
            query = RunsQuery.model_validate(dict(request.query_params))
        except ValidationError as exc:
            return self.page("error.html.j2", request, status=400, message=_unreadable(exc))
        every = self.store.runs()
        shown = filter_runs(every, query)
        return self.page(
            "runs.html.j2",
            request,
            query=query,
            runs=shown[(query.page - 1) * query.size : query.page * query.size],
            matching=len(shown),
            total=len(every),
            pages=max(1, -(-len(shown) // query.size)),
            targets=sorted({e.target for e in every}),
            suites=sorted({e.suite for e in every}),
            verdicts=sorted({e.outcome for e in every}),
            trends=trends(shown),
            unreadable=sorted(self.store.unreadable.items()),
        )

    # --- runs in progress ----------------------------------------------------------------
    def live_list(self, request: Request) -> Response:
        """The runs page's "in progress" box (htmx polls it while a run goes)."""
        from evalrunner.viewer.live import live_runs

        return self.page("live_list.html.j2", request, live=live_runs(self.store.source))

    def _finished(self, run_id: str) -> RunEntry | None:
        return next((e for e in self.store.runs() if e.run_id == run_id), None)

    def live(self, request: Request) -> Response:
        from evalrunner.viewer.live import live_records

        run_id = request.path_params["run_id"]
        finished = self._finished(run_id)
        try:
            run, records = live_records(self.store.source, run_id)
        except NotFound:
            if finished is None:
                raise
            return RedirectResponse(f"/runs/{finished.run_id}", status_code=303)
        template = "live_cases.html.j2" if request.url.path.endswith("/cases") else "live.html.j2"
        known = self.questions
        questions = [known.question(r) if known else None for r in records]
        return self.page(
            template,
            request,
            run=run,
            records=records,
            questions=questions,
            asked=any(q is not None for q in questions),
            finished=finished,
        )

    # --- one run ----------------------------------------------------------------------
    def _case_query(self, request: Request) -> CaseQuery:
        try:
            return CaseQuery.model_validate(dict(request.query_params))
        except ValidationError:
            return CaseQuery()

    def _table(self, run: LoadedRun, query: CaseQuery) -> dict[str, Any]:
        return {
            "cases": query_cases(run, query),
            "cq": query,
            "metrics": run.head.metrics,
            "categories": categories(run),
            "perturbations": perturbations(run),
        }

    def run(self, request: Request) -> Response:
        entry = self.store.run(request.path_params["run_id"])
        data = self.store.report(entry.run_id)
        stored = self._labels(entry)
        return self.page(
            "run.html.j2",
            request,
            entry=entry,
            data=data.head,
            agreements=labelling.agreements(data, stored) if stored else [],
            labelled=len(stored),
            **self._table(data, self._case_query(request)),
        )

    def case_table(self, request: Request) -> Response:
        """The table alone for htmx; the whole run page for anything else (the address htmx
        pushes, reloaded or bookmarked, opens the run with the same filters)."""
        if request.headers.get("hx-request") != "true":
            return self.run(request)
        entry = self.store.run(request.path_params["run_id"])
        data = self.store.report(entry.run_id)
        return self.page(
            "case_table.html.j2",
            request,
            entry=entry,
            **self._table(data, self._case_query(request)),
        )

    # --- one case ---------------------------------------------------------------------
    def case(self, request: Request) -> Response:
        entry = self.store.run(request.path_params["run_id"])
        data = self.store.report(entry.run_id)
        number = int(request.path_params["n"])
        if not 0 <= number < len(data):
            raise NotFound(f"run {entry.run_id} has no case number {number}")
        row = data.row(number)
        around = related(data, number)
        mine = {
            x.metric: x
            for x in self._labels(entry)
            if (x.case_id, x.iteration) == (row.case_id, row.iteration)
        }
        return self.page(
            "case.html.j2",
            request,
            entry=entry,
            data=data.head,
            n=number,
            row=row,
            eye=evaluation_eye(row.answer, row.contexts),
            infos={m.metric: m for m in data.head.metrics},
            labels=mine,
            **around,
        )

    # --- labels -----------------------------------------------------------------------
    def _labels(self, entry: RunEntry) -> list[labelling.Label]:
        key = f"{entry.prefix}{labelling.LABELS}"
        if not self.store.source.exists(key):
            return []
        return labelling.parse_labels(self.store.source.read(key))

    async def label(self, request: Request) -> Response:
        form = await _form(request)
        given = str(form.get("token") or "")
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return self.page(
                "error.html.j2",
                request,
                status=403,
                message="this write carries no valid token: reload the page and try again",
            )
        entry = self.store.run(request.path_params["run_id"])
        data = self.store.report(entry.run_id)
        try:
            number = int(str(form.get("n") or ""))
            row = data.row(number) if 0 <= number < len(data) else None
        except ValueError:
            row = None
        metric = str(form.get("metric") or "")
        verdict = str(form.get("verdict") or "")
        if row is None or row.result(metric) is None or verdict not in ("pass", "fail"):
            return self.page(
                "error.html.j2",
                request,
                status=400,
                message="a label names a case of this run, one of its metrics, and pass or fail",
            )
        label = labelling.Label(
            case_id=row.case_id,
            iteration=row.iteration,
            metric=metric,
            human_pass=verdict == "pass",
            note=str(form.get("note") or "")[:2000],
        )
        self.store.source.update(
            f"{entry.prefix}{labelling.LABELS}", labelling.adding(label), "text/csv"
        )
        return RedirectResponse(f"/runs/{entry.run_id}/cases/{number}#labels", status_code=303)

    def calibration(self, request: Request) -> Response:
        """calibrate's page (agreement, suggested thresholds, disagreements) for the labels
        stored beside the run: the same computation and page as ``evalrunner calibrate``."""
        from evalrunner.reports.views.html import render_calibration

        entry = self.store.run(request.path_params["run_id"])
        stored = self._labels(entry)
        if not stored:
            return self.page(
                "error.html.j2",
                request,
                status=404,
                message="no labels yet: open a case and mark a metric's verdict right or wrong",
            )
        result = labelling.calibration(self.store.report(entry.run_id), stored, entry.prefix)
        html = render_calibration(result)
        return HTMLResponse(html, headers={"content-security-policy": _report_csp()})

    # --- compare and leaderboard --------------------------------------------------------
    def compare(self, request: Request) -> Response:
        from evalrunner.reports.analysis.regression import compare

        picked = request.query_params.getlist("run")
        if "a" not in request.query_params and len(picked) == 2:
            a, b = sorted((self.store.run(r) for r in picked), key=lambda e: e.started_at)
        elif "a" in request.query_params:
            a = self.store.run(request.query_params["a"])
            b = self.store.run(request.query_params.get("b", ""))
        else:
            return self.page(
                "error.html.j2",
                request,
                status=400,
                message="compare needs two runs: tick exactly two on the runs page",
            )
        base, current = self.store.report(a.run_id).full(), self.store.report(b.run_id).full()
        regression = compare(current, base, baseline_report_prefix=a.prefix)
        deltas = sorted(
            regression.deltas,
            key=lambda d: (not d.worse, not d.significant, -(abs(d.delta or 0.0))),
        )
        context: dict[str, Any] = {
            "a": a,
            "b": b,
            "regression": regression,
            "deltas": deltas,
            "cases": answer_changes(base, current, {f.case_id for f in regression.new_failures}),
            "export_link": f"/compare/export.zip?a={a.run_id}&b={b.run_id}",
        }
        if not request.url.path.endswith("export.zip"):
            return self.page("compare.html.j2", request, **context)
        from evalrunner.viewer.export import export_comparison

        html = self.render("compare.html.j2", request, standalone=_css(), **context)
        archive = export_comparison(
            html,
            self.store.source.read(f"{a.prefix}report.json"),
            self.store.source.read(f"{b.prefix}report.json"),
            regression.model_dump_json(indent=1),
        )
        name = _filename(f"compare-{a.run_id}-{b.run_id}.zip")
        return Response(
            archive,
            media_type="application/zip",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )

    def leaderboard(self, request: Request) -> Response:
        from evalrunner.reports.analysis.leaderboard import build_leaderboard
        from evalrunner.reports.views.html import render_leaderboard

        chosen = [self.store.run(r) for r in request.query_params.getlist("run")]
        if len(chosen) < 2:
            return self.page(
                "error.html.j2",
                request,
                status=400,
                message="a leaderboard needs two runs or more: tick them on the runs page",
            )
        try:
            board = build_leaderboard(
                [self.store.report(e.run_id).full() for e in chosen],
                created_at=datetime.now(UTC).isoformat(timespec="seconds"),
                report_prefixes=[e.prefix for e in chosen],
            )
        except ValueError as exc:
            return self.page("error.html.j2", request, status=400, message=str(exc))
        if request.url.path.endswith("/report"):
            # the reports' own self-contained page, with the policy it is written for (its
            # inline style and its one script by hash; still nothing remote)
            html = render_leaderboard(board)
            return HTMLResponse(html, headers={"content-security-policy": _report_csp()})
        from evalrunner.viewer.charts import bars, radar

        return self.page(
            "leaderboard.html.j2",
            request,
            board=board,
            radar=radar(board),
            bars=bars(board),
            report_link=f"/leaderboard/report?{request.url.query}",
        )

    # --- export -----------------------------------------------------------------------
    def export(self, request: Request) -> Response:
        from evalrunner.viewer.export import export_run

        entry = self.store.run(request.path_params["run_id"])
        archive = export_run(self.store, entry)
        name = _filename(f"{entry.target}-{entry.run_id}.zip")
        return Response(
            archive,
            media_type="application/zip",
            headers={"content-disposition": f'attachment; filename="{name}"'},
        )


#: A label form is a few short fields; anything larger is not one.
MAX_FORM_BYTES = 16_384


async def _form(request: Request) -> dict[str, str]:
    """An urlencoded form (the only kind the viewer's pages send), parsed by the standard
    library; a body too large or of another type reads as empty (and so has no token)."""
    from urllib.parse import parse_qsl

    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/x-www-form-urlencoded":
        return {}
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return {}
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def _unreadable(exc: ValidationError) -> str:
    """A query the page cannot read, said per parameter (a hand-edited or truncated address
    is the user's own input: a 400 naming what to change, not a server error)."""
    said = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:5])
    return f"this address's query cannot be read ({said}); fix or remove it"


def _filename(name: str) -> str:
    """A download's file name from run text: only characters every header and file system
    take (a target name may hold quotes, newlines or any script)."""
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:120]


@cache
def _css() -> str:
    from importlib import resources

    return resources.files("evalrunner.viewer").joinpath("static", "viewer.css").read_text("utf-8")


def _report_csp() -> str:
    from evalrunner.reports.views.html import page_policy

    return page_policy()


def create_app(
    source: Source,
    *,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    questions: SuiteQuestions | None = None,
) -> Starlette:
    """The viewer over ``source``. ``token`` (random when not given) guards every write;
    ``questions`` (``run --view``) gives the live pages the suites' questions."""
    viewer = Viewer(RunStore(source), token or secrets.token_urlsafe(32), questions)

    async def not_found(request: Request, exc: Exception) -> Response:
        return viewer.page("error.html.j2", request, status=404, message=str(exc))

    async def bad_input(request: Request, exc: Exception) -> Response:
        return viewer.page("error.html.j2", request, status=400, message=str(exc))

    from importlib import resources

    static = StaticFiles(directory=str(resources.files("evalrunner.viewer").joinpath("static")))
    app = Starlette(
        routes=[
            Route("/", viewer.runs),
            Route("/runs/{run_id}", viewer.run),
            Route("/runs/{run_id}/cases", viewer.case_table),
            Route("/runs/{run_id}/cases/{n:int}", viewer.case),
            Route("/runs/{run_id}/labels", viewer.label, methods=["POST"]),
            Route("/runs/{run_id}/export.zip", viewer.export),
            Route("/runs/{run_id}/calibration", viewer.calibration),
            Route("/live", viewer.live_list),
            Route("/live/{run_id}", viewer.live),
            Route("/live/{run_id}/cases", viewer.live),
            Route("/compare", viewer.compare),
            Route("/compare/export.zip", viewer.compare),
            Route("/leaderboard", viewer.leaderboard),
            Route("/leaderboard/report", viewer.leaderboard),
            Mount("/static", app=static, name="static"),
        ],
        middleware=[
            Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts or LOOPBACK_HOSTS),
            Middleware(SecurityHeaders),
        ],
        exception_handlers={
            NotFound: not_found,
            UnsafeKey: not_found,
            EvalRunnerError: bad_input,
        },
    )
    app.state.viewer = viewer
    return app
