"""Wave's permission entries, read once for every agent CLI adapter.

An entry of `allowed_tools` or `deny` is `Tool` or `Tool(pattern)`: `Read`,
`Write(.agents/specs/*)`, `Bash(go test*)`, `mcp__github__create_issue`. Wave reads
`*` alone as every tool and `Tool(*)` (or `Tool(**)`) as the whole tool; so does swell.
Each adapter maps the entries onto what its CLI accepts and lists, as `Unenforced`,
those its CLI cannot hold to; the run records one warning each, `swell validate` warns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

EVERYTHING = "*"


@dataclass(frozen=True)
class Entry:
    """One permission entry: the tool as written and its argument pattern ("" = all)."""

    tool: str
    pattern: str
    text: str  # as written in wave.yaml

    @property
    def everything(self) -> bool:
        return self.tool == EVERYTHING and not self.pattern


@dataclass(frozen=True)
class Unenforced:
    """An entry an adapter's CLI cannot hold to, and what happens instead."""

    entry: str
    denied: bool  # a `deny` entry (else one of `allowed_tools`)
    why: str

    def message(self, adapter: str) -> str:
        field = "deny" if self.denied else "allowed_tools"
        return f"adapter '{adapter}' cannot enforce {field} entry '{self.entry}': {self.why}"


def parse(text: str) -> Entry:
    """`Tool(pattern)` -> Entry; `(*)` and `(**)` are the whole tool, as in Wave."""
    stripped = text.strip()
    name, paren, rest = stripped.partition("(")
    if not paren or not rest.endswith(")"):
        return Entry(stripped, "", text)
    pattern = rest[:-1].strip()
    return Entry(name.strip(), "" if pattern in ("*", "**") else pattern, text)


def entries(texts: Iterable[str]) -> list[Entry]:
    return [parse(text) for text in texts if text.strip()]


def allows_everything(allowed: Iterable[str]) -> bool:
    """Whether `allowed_tools` holds `*`: every tool, nothing restricted."""
    return any(entry.everything for entry in entries(allowed))


def whole(entry: Entry) -> str:
    """The entry as Claude Code-style text, `Tool(*)` written as `Tool`."""
    return f"{entry.tool}({entry.pattern})" if entry.pattern else entry.tool


__all__ = ["EVERYTHING", "Entry", "Unenforced", "allows_everything", "entries", "parse", "whole"]
