"""The Typer application: global options, command registration, and error handling."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import click
import typer

from swell import __version__

app = typer.Typer(
    name="swell",
    help="Run multi-agent software pipelines written in the Wave manifest format.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"swell {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project", "-C", help="Project directory (default: search upward from cwd)."
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    ctx.obj = project


def _register() -> None:
    """Every command, in the order `swell --help` lists them (once per process)."""
    from swell.cli import gates, inspect, project, runs, thread

    if app.registered_commands:
        return

    app.command()(project.init)
    app.command()(project.validate)
    app.command()(runs.run)
    app.command()(runs.resume)
    app.command("list")(inspect.list_runs)
    app.command()(inspect.status)
    app.command()(inspect.logs)
    app.command()(inspect.artifacts)
    app.command()(gates.approve)
    app.command()(gates.reject)
    app.command()(gates.cancel)
    app.command()(thread.thread)


def _undecodable(arg: str) -> bool:
    """Bytes that are not UTF-8 reach Python as lone surrogates, which nothing can store."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def main() -> None:
    """Console entry point: user errors print one clear message and exit non-zero."""
    from swell.errors import ManifestError, SwellError

    _register()
    bad = next((i for i, arg in enumerate(sys.argv[1:], 1) if _undecodable(arg)), None)
    if bad is not None:
        print(f"error: argument {bad} is not valid UTF-8 text", file=sys.stderr)
        sys.exit(2)
    try:
        # without standalone mode, click returns the code of a typer.Exit instead of exiting
        code = app(standalone_mode=False)
        sys.exit(code if isinstance(code, int) else 0)
    except SwellError as exc:
        if isinstance(exc, ManifestError):
            for problem in exc.problems:
                print(str(problem), file=sys.stderr)
            count = len(exc.problems)
            print(f"{count} problem{'s' if count != 1 else ''} found", file=sys.stderr)
        else:
            print(f"error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except click.ClickException as exc:  # usage errors, in non-standalone mode
        exc.show()
        sys.exit(exc.exit_code)
