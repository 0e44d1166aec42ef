"""The part of git's ignore rules that checkpoints match in this process
(docs/time-travel.md, "What is matched here").

Supported: blank lines and `#` comments; `!` negation; a trailing `/` (directories
only); a pattern without a `/` before its end matches a name at any depth below its
`.gitignore`, one with a `/` is anchored there (a leading `/` only anchors); `*` and
`?` (never matching `/`); `**` as a whole segment (`**/x`, `x/**`, `a/**/b`). Trailing
spaces are dropped. Within a file the last matching pattern decides; a deeper
`.gitignore` before a shallower one, those before the global excludes file; an
ignored directory is not entered, so nothing below it can be re-included.

Anything else (`[` classes, `\\` escapes, `**` inside a name, a carriage return, a
byte-order mark) is `Unsupported`: the caller lets git do the whole checkpoint."""

from __future__ import annotations

import re
from dataclasses import dataclass


class Unsupported(Exception):
    """A pattern this matcher does not handle: git must."""


@dataclass(frozen=True)
class Pattern:
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool
    basename: bool  # matched against the name alone, not the path


Rules = tuple[Pattern, ...]


def _segment(text: str) -> str:
    return "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in text)


def compile_pattern(line: str) -> Pattern | None:
    """One line of a `.gitignore`; None for a blank line or a comment."""
    if "\\" in line or "[" in line or "\r" in line or "\ufeff" in line:
        raise Unsupported(line)
    line = line.rstrip(" ")
    if not line or line.startswith("#"):
        return None
    negated = line.startswith("!")
    if negated:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/") if dir_only else line
    if not line:
        return None
    basename = "/" not in line
    parts = line.lstrip("/").split("/")
    if any("**" in p and p != "**" for p in parts):
        raise Unsupported(line)
    out = ""
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out += ".*" if last else "(?:.*/)?"
        else:
            out += _segment(part) + ("" if last else "/")
    return Pattern(re.compile(out + r"\Z", re.S), negated, dir_only, basename)


def parse(text: str) -> Rules:
    found = (compile_pattern(line) for line in text.split("\n"))
    return tuple(p for p in found if p is not None)


def verdict(rules: Rules, rel: str, name: str, is_dir: bool) -> bool | None:
    """Whether `rules` ignore `rel` (a path relative to their file's directory): True,
    False (re-included by a `!`), or None when no pattern matches."""
    for pattern in reversed(rules):
        if pattern.dir_only and not is_dir:
            continue
        if pattern.regex.match(name if pattern.basename else rel):
            return not pattern.negated
    return None


__all__ = ["Pattern", "Rules", "Unsupported", "compile_pattern", "parse", "verdict"]
