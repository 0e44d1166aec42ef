"""The Typer application: global options, command registration, and error handling."""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import sys
import threading
from pathlib import Path
from typing import Annotated, Any, NoReturn

import click
import typer

from swell import __version__
from swell.cli.render import for_terminal

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


def _keep_argument_help() -> None:
    """typer (< 0.25) sets an argument's `help`, then calls click's `Argument.__init__`,
    which since click 8.5 takes a `help` of its own and resets it: `--help` showed no
    text for any argument. Set it again once click is done, and leave the listing of
    arguments to typer's "Arguments" section (not click's own as well)."""
    from typer.core import TyperArgument, TyperCommand

    original = TyperArgument.__init__
    if getattr(original, "_keeps_help", False):
        return

    def init(self: TyperArgument, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.help = kwargs.get("help")

    def no_second_section(self: TyperCommand, ctx: Any, formatter: Any) -> None:
        return None

    init._keeps_help = True  # type: ignore[attr-defined]
    TyperArgument.__init__ = init  # type: ignore[method-assign]
    if hasattr(TyperCommand, "format_arguments"):
        TyperCommand.format_arguments = no_second_section  # type: ignore[method-assign,assignment]


# every command: name -> (module of swell.cli, function), in the order `swell --help`
# lists them
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("project", "init"),
    "validate": ("project", "validate"),
    "run": ("runs", "run"),
    "resume": ("runs", "resume"),
    "list": ("catalog", "list_"),
    "status": ("inspect", "status"),
    "logs": ("inspect", "logs"),
    "artifacts": ("inspect", "artifacts"),
    "diff": ("timetravel", "diff"),
    "fork": ("timetravel", "fork"),
    "rewind": ("timetravel", "rewind"),
    "approve": ("gates", "approve"),
    "reject": ("gates", "reject"),
    "cancel": ("gates", "cancel"),
    "thread": ("thread", "thread"),
    "doctor": ("doctor", "doctor"),
    "clean": ("clean", "clean"),
    "serve": ("serve", "serve"),
    "watch": ("watch", "watch"),
    "route": ("watch", "route"),
    "retro": ("retro", "retro"),  # a group: `retro RUN`, `retro stats`
    "worker": ("worker", "worker"),
    "bench": ("bench", "bench"),  # a group: `bench run`, `bench report`, `bench make`
}
_GLOBAL_WITH_VALUE = ("--project", "-C")
# what a command imports on its way besides its own module: `entry` imports it first,
# with the garbage collector off (imports make many objects and no garbage; the
# collector would walk them again and again)
WARM: dict[str, tuple[str, ...]] = {
    "run": ("swell.runtime", "swell.store.sqlite.store", "swell.cli.render"),
    "resume": ("swell.runtime", "swell.store.sqlite.store", "swell.cli.render"),
    "logs": ("swell.cli.history", "swell.store.sqlite.store"),
}


def _command_named(argv: list[str]) -> str | None:
    """The command `argv` runs, if it names one; "" when `--version` answers first."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _GLOBAL_WITH_VALUE:
            skip = True
        elif arg == "--version":
            return ""
        elif arg == "--" or not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def _register(argv: list[str] | None = None) -> None:
    """Register the command `argv` runs, or (`None`: help, a usage error) every command.

    Each command's module is imported only when it is registered, and building a
    command's options costs typer time: `swell run` need not pay for the others."""
    named = _command_named(argv) if argv is not None else None
    wanted = list(COMMANDS) if named is None else [named] if named else []
    registered = {command.name for command in app.registered_commands}
    registered |= {group.name for group in app.registered_groups}
    if not registered:
        _keep_argument_help()
    for name in wanted:
        if name in registered:
            continue
        module, function = COMMANDS[name]
        command = getattr(importlib.import_module(f"swell.cli.{module}"), function)
        if isinstance(command, typer.Typer):  # a group of subcommands
            app.add_typer(command, name=name)
        else:
            app.command(name)(command)


def _undecodable(arg: str) -> bool:
    """Bytes that are not UTF-8 reach Python as lone surrogates, which nothing can store."""
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def main() -> None:
    """Console entry point: user errors print one clear message and exit non-zero."""
    from swell.cli.watch import wave_continuous
    from swell.errors import ManifestError, SwellError

    sys.argv[1:] = wave_continuous(sys.argv[1:], _command_named(sys.argv[1:]))
    _register(sys.argv[1:])
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
                print(for_terminal(str(problem)), file=sys.stderr)
            count = len(exc.problems)
            print(f"{count} problem{'s' if count != 1 else ''} found", file=sys.stderr)
        else:
            print(for_terminal(f"error: {exc}"), file=sys.stderr)  # may quote a step's words
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


def entry() -> NoReturn:
    """The `swell` program (console script, `python -m swell`): `main`, then a quick
    exit. Once the command is done, everything it wrote is committed (the store
    survives a kill at any point anyway) and flushed, so the interpreter's teardown,
    which frees every module and object one by one, is skipped: exit handlers run,
    the standard streams are flushed, and the process ends. Not while a thread runs
    that the interpreter would wait for (daemon threads it would not)."""
    _warm(sys.argv[1:])
    try:
        main()
        code: object = 0
    except SystemExit as exc:
        code = exc.code
    status = code if isinstance(code, int) else (0 if code is None else 1)
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
    main_thread = threading.main_thread()
    if any(t is not main_thread and not t.daemon for t in threading.enumerate()):
        sys.exit(status)  # the interpreter waits for such a thread: so do we
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)


def _warm(argv: list[str]) -> None:
    """Import what the command `argv` names will import, the collector off meanwhile;
    then freeze it all (it lives as long as the process: no collection need look at
    it again). A module that fails to import is left for the command to report."""
    named = _command_named(argv)
    if not named:
        return
    gc.disable()
    try:
        for module in (f"swell.cli.{COMMANDS[named][0]}", *WARM.get(named, ())):
            with contextlib.suppress(Exception):
                # `__import__`, not `importlib.import_module`: only an import through
                # the interpreter's own path is listed by `python -X importtime`, and
                # these are most of a command's imports (docs/performance.md)
                __import__(module)
    finally:
        gc.enable()
    gc.freeze()
