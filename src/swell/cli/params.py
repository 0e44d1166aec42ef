"""A command's options and arguments, declared without importing typer or click.

The command modules write `typer.Option(...)`, `typer.Argument(...)`, `typer.Exit`
and `typer.BadParameter` as before, with this module in typer's place (`from
swell.cli import params as typer`): importing typer and click costs ~70 ms, which
`swell list` or `swell run` must not pay when the command line is plain
(docs/performance.md, "Start-up"). The same declarations serve twice: `swell.cli.quick`
parses a plain command line with them, and `for_typer` hands them to typer, which
parses everything else (`--help`, usage errors) exactly as before.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, Protocol


class Decl:
    """`Option(*names, **settings)` or `Argument(**settings)`, as typer takes them."""

    __slots__ = ("kind", "names", "settings")

    def __init__(self, kind: str, names: tuple[str, ...], settings: dict[str, Any]) -> None:
        self.kind = kind
        self.names = names
        self.settings = settings


def Option(*names: str, **settings: Any) -> Any:
    return Decl("option", names, settings)


def Argument(**settings: Any) -> Any:
    return Decl("argument", (), settings)


class Context(Protocol):
    """What a command reads of typer's context: the global options (`--project`)."""

    obj: Any


class Exit(SystemExit):
    """End the command with `code`: click lets a SystemExit through untouched."""

    def __init__(self, code: int = 0) -> None:
        super().__init__(code)


def BadParameter(message: str, param_hint: str | None = None) -> Exception:
    """click's own error, so that click prints it with the command's usage line; only
    a command line that is wrong pays for importing click."""
    import click

    return click.BadParameter(message, param_hint=param_hint)


def declared(command: Callable[..., Any]) -> dict[str, tuple[Any, Decl | None]]:
    """Each parameter's type and declaration, in order (the annotations evaluated)."""
    hints = typing.get_type_hints(command, include_extras=True)
    out: dict[str, tuple[Any, Decl | None]] = {}
    for name in command.__code__.co_varnames[: command.__code__.co_argcount]:
        hint = hints.get(name)
        decl = None
        if typing.get_origin(hint) is typing.Annotated:
            hint, *extras = typing.get_args(hint)
            decl = next((e for e in extras if isinstance(e, Decl)), None)
        out[name] = (hint, decl)
    return out


def for_typer(command: Callable[..., Any]) -> None:
    """Give `command` the signature typer reads, with typer's own declarations in place
    of this module's (typer takes a function's `__signature__` when it has one). The
    command is typer's from then on: `swell.cli.quick` no longer parses for it."""
    import inspect

    import typer

    signature = inspect.signature(command)
    hints = typing.get_type_hints(command, include_extras=True)
    parameters = []
    for name, (bare, decl) in declared(command).items():
        hint = hints.get(name, inspect.Parameter.empty)
        if bare is Context:
            hint = typer.Context
        elif decl is not None:
            made = (
                typer.Option(*decl.names, **decl.settings)
                if decl.kind == "option"
                else typer.Argument(**decl.settings)
            )
            hint = typing.Annotated[bare, made]
        parameters.append(signature.parameters[name].replace(annotation=hint))
    command.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    # typer also reads the annotations themselves, for a parameter it has no
    # declaration of (the context)
    command.__annotations__ = {p.name: p.annotation for p in parameters}
