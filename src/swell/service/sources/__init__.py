"""Work sources: a URI names one (`file:queue.jsonl`, `dir:inbox`,
`github:repo=o/r,label=ready,state=open`, `gitlab:…`, `gitea:…`); a new kind is one
module plus one entry in `KINDS`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from swell.service.sources.base import Source, SourceError, WorkItem, params
from swell.service.sources.files import Directory, QueueFile
from swell.service.sources.forge import FORGES, ForgeIssues

__all__ = ["KINDS", "Source", "SourceError", "WorkItem", "open_source"]


def _file(rest: str, base: Path, uri: str) -> Source:
    path = base / rest
    return Directory(path, uri) if path.is_dir() else QueueFile(path, uri)


def _dir(rest: str, base: Path, uri: str) -> Source:
    return Directory(base / rest, uri)


def _forge(name: str) -> Callable[[str, Path, str], Source]:
    return lambda rest, base, uri: ForgeIssues(FORGES[name], params(rest, uri), uri)


# kind -> (the URI's text after `kind:`, the directory relative paths start from, the URI)
KINDS: dict[str, Callable[[str, Path, str], Source]] = {
    "file": _file,
    "dir": _dir,
    **{name: _forge(name) for name in FORGES},
}


def open_source(uri: str, base: Path) -> Source:
    """The source `uri` names (relative paths from `base`); SourceError listing the
    known kinds when it names none."""
    kind, sep, rest = uri.partition(":")
    if not sep or not rest:
        raise SourceError(f"work source `{uri}` is not KIND:PARAMS (e.g. file:queue.jsonl)")
    factory = KINDS.get(kind)
    if factory is None:
        raise SourceError(f"unknown work source kind `{kind}` (known: {', '.join(KINDS)})")
    return factory(rest, base, uri)
