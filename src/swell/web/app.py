"""`create_app(settings)`: the dashboard's ASGI app. Opening the store and building the
templates happen here, when the app is made, never at import time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from fastapi.staticfiles import StaticFiles

from swell.errors import PipelineNotFound, RunNotFound, RunStateError, StoreError, SwellError
from swell.store.capabilities import page_reader
from swell.store.protocols import Store
from swell.web import analytics, api, bench, health, hooks, run_forms, runs_api, views
from swell.web.data import Reader
from swell.web.openapi import describe_400s
from swell.web.security import Guard, middleware
from swell.web.state import AppState, ServeSettings, new_csrf
from swell.workspace.safe import UnsafePath

HERE = Path(__file__).parent


def templates() -> Any:
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from swell.web import text, timefmt

    env = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
    )
    env.filters["clean"] = text.clean
    env.filters["short"] = text.short
    env.filters["q"] = text.path_part
    env.filters["ms"] = timefmt.ms
    env.filters["when"] = timefmt.when
    return env


def _status_of(exc: SwellError) -> int:
    if isinstance(exc, RunNotFound | PipelineNotFound):
        return 404
    if isinstance(exc, UnsafePath):
        return 403
    if isinstance(exc, RunStateError):
        return 409
    if isinstance(exc, StoreError):  # a full disk, a read-only or damaged store: not the request
        return 503
    return 400


async def _swell_error(request: Request, exc: Exception) -> Response:
    """A user's error (unknown run, no waiting gate, unsafe path) is one message."""
    status = _status_of(exc) if isinstance(exc, SwellError) else 500
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": str(exc)}, status_code=status)
    return PlainTextResponse(str(exc), status_code=status)


async def _bad_request(request: Request, exc: Exception) -> Response:
    """A query or path value out of its bounds or of the wrong kind is a 400 naming
    it, as one message (FastAPI's default is a 422 with pydantic's error list)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    message = "; ".join(_problem(e) for e in errors) or "bad request"
    if request.url.path.startswith("/api/"):
        return JSONResponse({"detail": message}, status_code=400)
    return PlainTextResponse(message, status_code=400)


def _problem(error: Any) -> str:
    where = [str(part) for part in error.get("loc", ())]
    kind = {"query": "query parameter", "path": "path segment", "header": "header"}
    name = f"{kind.get(where[0], where[0])} '{'.'.join(where[1:])}'" if where else "request"
    given = error.get("input")
    shown = f" (got {str(given)[:40]!r})" if isinstance(given, str | int) else ""
    return f"{name}: {error.get('msg', 'invalid')}{shown}"


def create_app(settings: ServeSettings, store: Store | None = None) -> FastAPI:
    """The app over `settings`' store (or the `store` given, for tests)."""
    from swell.store.location import open_project_store

    store = store or open_project_store(settings.root)
    state = AppState(
        settings=settings,
        reader=Reader(store, page_reader(store)),
        guard=Guard(settings.token, new_csrf(), settings.start_token),
        templates=templates(),
    )
    app = FastAPI(
        title="swell dashboard",
        version="1",
        openapi_url="/api/openapi.json",
        docs_url=None,  # FastAPI's docs pages load their scripts from a CDN: not here
        redoc_url=None,
    )
    app.state.swell = state
    app.middleware("http")(middleware(state.guard))
    app.add_exception_handler(SwellError, _swell_error)
    app.add_exception_handler(RequestValidationError, _bad_request)
    describe_400s(app)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(api.router)
    app.include_router(runs_api.router)
    app.include_router(analytics.api)
    app.include_router(analytics.pages)
    app.include_router(run_forms.router)
    app.include_router(health.router)
    app.include_router(views.router)
    app.include_router(hooks.router)  # forge webhooks in (web/hooks.py)
    app.include_router(bench.router)
    return app
