"""The `swell` program: global options, the commands, and error handling.

A plain command line (`swell run fix -o json`) is parsed by swell.cli.quick and its
command called without importing typer or click; any other (`--help`, a usage error)
goes to the typer application, built here only then (docs/performance.md, "Start-up")."""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

from swell import __version__
from swell.cli import params

if TYPE_CHECKING:
    import typer

_app: typer.Typer | None = None


def __getattr__(name: str) -> Any:
    if name == "app":  # the typer application, for whoever asks for it by name
        return typer_app()
    raise AttributeError(name)


def typer_app() -> typer.Typer:
    """The typer application with its global options (commands: `_register`)."""
    global _app
    if _app is not None:
        return _app
    import typer

    _app = typer.Typer(
        name="swell",
        help="Run multi-agent software pipelines written in the Wave manifest format.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    _keep_argument_help()
    params.for_typer(main_options)
    _app.callback()(main_options)
    return _app


def _version(value: bool) -> None:
    if value:
        print(f"swell {__version__}")
        raise SystemExit(0)


def main_options(
    ctx: params.Context,
    project: Annotated[
        Path | None,
        params.Option(
            "--project", "-C", help="Project directory (default: search upward from cwd)."
        ),
    ] = None,
    version: Annotated[
        bool,
        params.Option(
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
    # what every `swell run` imports (preflight, the local executor, the output
    # printers), with the collector off, not one module at a time while it runs
    "run": (
        "swell.runtime",
        "swell.store.sqlite.store",
        "swell.cli.render",
        "swell.cli.live",
        "swell.ops.preflight",
        "swell.executors.local",
    ),
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
    import typer

    app = typer_app()
    named = _command_named(argv) if argv is not None else None
    wanted = list(COMMANDS) if named is None else [named] if named else []
    registered = {command.name for command in app.registered_commands}
    registered |= {group.name for group in app.registered_groups}
    for name in wanted:
        if name in registered:
            continue
        module, function = COMMANDS[name]
        command = getattr(importlib.import_module(f"swell.cli.{module}"), function)
        if isinstance(command, typer.Typer):  # a group of subcommands
            for info in (command.registered_callback, *command.registered_commands):
                if info is not None and info.callback is not None:
                    params.for_typer(info.callback)
            app.add_typer(command, name=name)
        else:
            params.for_typer(command)
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
    if "--continuous" in sys.argv:  # Wave's `run --continuous`: rare, and watch is big
        from swell.cli.watch import wave_continuous

        sys.argv[1:] = wave_continuous(sys.argv[1:], _command_named(sys.argv[1:]))
    bad = next((i for i, arg in enumerate(sys.argv[1:], 1) if _undecodable(arg)), None)
    if bad is not None:
        print(f"error: argument {bad} is not valid UTF-8 text", file=sys.stderr)
        sys.exit(2)
    try:
        code = 0 if _quick(sys.argv[1:]) else _with_typer()
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        sys.exit(_reported(exc))
    sys.exit(code)


def _with_typer() -> int:
    """Parse the command line with typer (help, usage errors) and run its command."""
    _register(sys.argv[1:])
    # without standalone mode, click returns the code of a typer.Exit instead of exiting
    code = typer_app()(standalone_mode=False)
    return code if isinstance(code, int) else 0


def _reported(exc: Exception) -> int:
    """Print what the user did wrong, in one clear message; the exit code. Anything
    else is a defect in swell and keeps its traceback."""
    from swell.cli.render import for_terminal
    from swell.errors import ManifestError, SwellError

    if isinstance(exc, SwellError):
        if isinstance(exc, ManifestError):
            for problem in exc.problems:
                print(for_terminal(str(problem)), file=sys.stderr)
            count = len(exc.problems)
            print(f"{count} problem{'s' if count != 1 else ''} found", file=sys.stderr)
        else:
            print(for_terminal(f"error: {exc}"), file=sys.stderr)  # may quote a step's words
        return exc.exit_code
    click = sys.modules.get("click")  # imported only if typer was
    if click is not None:
        if isinstance(exc, click.exceptions.Exit):
            return int(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            print("aborted", file=sys.stderr)
            return 130
        if isinstance(exc, click.ClickException):  # usage errors, in non-standalone mode
            exc.show()
            return int(exc.exit_code)
    raise exc


# commands whose module declares its options with swell.cli.params: a plain command
# line of one of them runs without typer
QUICK = {
    "init",
    "validate",
    "run",
    "resume",
    "list",
    "status",
    "logs",
    "artifacts",
    "watch",
    "route",
}


def _split_global(argv: list[str]) -> tuple[Path | None, str, list[str]] | None:
    """(--project, the command's name, its arguments) of a plain command line; the name
    is "" for `--version`. None when typer must parse the line."""
    project: Path | None = None
    words = iter(enumerate(argv))
    for i, arg in words:
        if arg in _GLOBAL_WITH_VALUE or arg.startswith("--project="):
            value = arg.partition("=")[2] if "=" in arg else next(words, (0, ""))[1]
            if not value:  # missing, or empty: typer's to judge
                return None
            project = Path(value)
        elif arg == "--version":
            return project, "", []
        elif arg in QUICK:
            return project, arg, argv[i + 1 :]
        else:
            return None
    return None


def _quick(argv: list[str]) -> bool:
    """Run a plain command line's command without typer; False when typer must parse
    the line (a usage error a command finds is typer's to print, with the usage)."""
    split = _split_global(argv)
    if split is None:
        return False
    project, name, rest = split
    if not name:
        print(f"swell {__version__}")
        return True
    from swell.cli import quick

    module, function = COMMANDS[name]
    command = getattr(importlib.import_module(f"swell.cli.{module}"), function)
    try:
        kwargs = quick.parse(command, rest, project)
        if kwargs is None:
            return False
        command(**kwargs)
    except Exception as exc:
        click = sys.modules.get("click")
        if click is not None and isinstance(exc, click.UsageError):
            return False
        raise
    return True


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
    threading = sys.modules.get("threading")  # never imported: no thread was started
    if threading is not None:
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
