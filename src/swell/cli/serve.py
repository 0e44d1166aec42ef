"""`swell serve`: the dashboard (swell.web) on a local address."""

from __future__ import annotations

import os
import secrets
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated

import typer

from swell.cli.common import project_dir

if TYPE_CHECKING:
    from fastapi import FastAPI


def serve(
    ctx: typer.Context,
    bind: Annotated[
        str, typer.Option("--bind", help="Address to listen on (loopback unless a token is set).")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port.")] = 8765,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="SWELL_SERVE_TOKEN",
            help="Every request must carry it (Authorization: Bearer, or open /?token=T "
            "once). Needed for any address but loopback.",
        ),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open", help="Open the dashboard in a browser.")
    ] = False,
) -> None:
    """Serve the dashboard: runs, their graphs and threads, live; approve gates, cancel runs."""
    from swell.errors import SwellError
    from swell.manifest.discovery import find_project_root
    from swell.manifest.loader import load_project
    from swell.web.security import check_bind

    check_bind(bind, token)
    try:
        import uvicorn

        from swell.web.app import create_app
        from swell.web.state import ServeSettings
    except ImportError as exc:
        raise SwellError(
            f"the dashboard needs the web extra ({exc.name} is missing): pip install 'swell[web]'"
        ) from None
    root = find_project_root(project_dir(ctx))
    load_project(root)  # a wave.yaml with errors (a bad schedule) is refused here, at its line
    # starting runs needs a token on loopback too: without --token, one made for that
    starter = None if token else secrets.token_urlsafe(24)
    settings = ServeSettings(root=root, bind=bind, port=port, token=token or None)
    app = create_app(replace(settings, start_token=starter))
    _hand_on_recorded(app)
    host = f"[{bind}]" if ":" in bind else bind
    url = f"http://{host}:{port}/" + (f"?token={token}" if token else "")
    print(f"swell dashboard on http://{host}:{port}/ (Ctrl-C stops it)", flush=True)
    if starter:
        print(
            f"to start runs: open http://{host}:{port}/?token={starter} once, "
            f"or send Authorization: Bearer {starter}",
            flush=True,
        )
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    # the access log would print every request; errors still show. Live streams stay
    # open as long as their runs go on: Ctrl-C closes them after a short grace
    uvicorn.run(
        app,
        host=bind,
        port=port,
        log_level=os.environ.get("SWELL_SERVE_LOG", "warning"),
        timeout_graceful_shutdown=2,
    )


def _hand_on_recorded(app: FastAPI) -> None:
    """Runs a webhook or POST /api/runs recorded but a stopped server did not hand on
    (docs/service.md): handed on now, in the background."""
    from swell.errors import SwellError
    from swell.executors import launch
    from swell.web.hooks import hand_on_recorded

    state = app.state.swell
    try:
        found = hand_on_recorded(state.settings.root, launch.supervisor(state.extra))
    except SwellError as exc:  # a store without dispatch keys: nothing of this kind
        print(f"warning: recorded runs not looked for: {exc}", flush=True)
        return
    for run_id in found:
        print(f"run {run_id}: recorded before the server stopped; handing it on", flush=True)
