"""The plain command line, parsed without typer or click.

`swell run fix -o json`, `swell list -n 5`: a command line of known options, each
with a value of the right type, is parsed here from the command's own declarations
(swell.cli.params) and the command called at once. Anything else (`--help`, an
unknown or misspelt option, a value of the wrong type, a missing argument, a short
option glued to its value) is not guessed at: `parse` returns None and typer parses
the whole line, with its help and its error messages (docs/performance.md,
"Start-up")."""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

from swell.cli.params import Context, Decl, declared

# settings of a declaration that change nothing in how a plain line parses
_HARMLESS = {"help", "metavar", "show_default", "hidden", "rich_help_panel", "callback"}
_LIMITS = {"min", "max"}


class Giveup(Exception):
    """This line is typer's to parse."""


class QuickContext:
    """The context a command gets: the global options, as typer's `ctx.obj`."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj


class _Param:
    __slots__ = ("callback", "default", "flags", "kind", "limits", "multiple", "name", "type")

    def __init__(self, name: str, hint: Any, decl: Decl | None, default: Any) -> None:
        if decl is None:  # typer makes a bare parameter an option of its own naming
            raise Giveup(name)
        settings = decl.settings
        if set(settings) - _HARMLESS - _LIMITS:
            raise Giveup(name)
        self.name = name
        self.kind = decl.kind
        self.callback: Callable[[Any], Any] | None = settings.get("callback")
        self.limits = (settings.get("min"), settings.get("max"))
        self.default = default
        self.type, self.multiple = _plain_type(hint)
        self.flags: dict[str, bool] = {}  # a flag's names: True sets it, False clears it
        if self.kind == "option":
            if not decl.names:
                raise Giveup(name)
            for spelling in decl.names:
                on, _, off = spelling.partition("/")
                self.flags[on.strip()] = True
                if off:
                    self.flags[off.strip()] = False
            if any(not n.startswith("-") for n in self.flags) or (
                self.type is not bool and any(not v for v in self.flags.values())
            ):
                raise Giveup(name)

    def convert(self, text: str) -> Any:
        kind = self.type
        try:
            value = kind(text)
        except ValueError:
            raise Giveup(self.name) from None
        low, high = self.limits
        if (low is not None and value < low) or (high is not None and value > high):
            raise Giveup(self.name)
        return value


def _plain_type(hint: Any) -> tuple[type, bool]:
    """(the type a value converts to, whether the parameter repeats)."""
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1:
            raise Giveup(str(hint))
        hint, args = rest[0], typing.get_args(rest[0])
    if typing.get_origin(hint) is list and args and args[0] in (str, int, float, Path):
        return args[0], True
    if hint in (str, int, float, bool, Path) or (
        isinstance(hint, type) and issubclass(hint, enum.Enum)
    ):
        return hint, False
    raise Giveup(str(hint))


def _params(command: Callable[..., Any]) -> list[_Param]:
    found = declared(command)
    defaults = command.__defaults__ or ()
    names = list(found)
    first_default = len(names) - len(defaults)
    out = []
    for i, (name, (hint, decl)) in enumerate(found.items()):
        if hint is Context:
            continue
        default = defaults[i - first_default] if i >= first_default else _REQUIRED
        out.append(_Param(name, hint, decl, default))
    return out


_REQUIRED = object()


def parse(command: Callable[..., Any], argv: list[str], obj: Any) -> dict[str, Any] | None:
    """The keyword arguments `command` takes for `argv` (what follows its name), or
    None when typer must parse it."""
    try:
        return _parse(command, argv, obj)
    except Giveup:
        return None


def _parse(command: Callable[..., Any], argv: list[str], obj: Any) -> dict[str, Any]:
    params = _params(command)
    options = {flag: p for p in params if p.kind == "option" for flag in p.flags}
    positional = [p for p in params if p.kind == "argument"]
    given: dict[str, Any] = {}
    words: list[str] = []
    rest = iter(argv)
    for arg in rest:
        if arg == "--":
            words.extend(rest)
            break
        if not arg.startswith("-") or arg == "-":
            words.append(arg)
            continue
        flag, eq, text = arg.partition("=")
        param = options.get(flag)
        if param is None or (eq and param.type is bool):
            raise Giveup(arg)  # unknown, or a short option glued to its value
        if param.type is bool:
            given[param.name] = param.flags[flag]
            continue
        if not eq:
            following = next(rest, None)
            if following is None:
                raise Giveup(arg)
            text = following
        value = param.convert(text)
        if param.multiple:
            given.setdefault(param.name, []).append(value)
        else:
            given[param.name] = value
    if len(words) > len(positional):
        raise Giveup("extra arguments")
    for param, word in zip(positional, words, strict=False):
        given[param.name] = param.convert(word)
    kwargs: dict[str, Any] = {}
    for param in params:
        value = given.get(param.name, param.default)
        if value is _REQUIRED:
            raise Giveup(param.name)
        if param.callback is not None:
            value = param.callback(value)
        kwargs[param.name] = value
    context = next((n for n, (h, _) in declared(command).items() if h is Context), None)
    if context is not None:
        kwargs[context] = QuickContext(obj)
    return kwargs
