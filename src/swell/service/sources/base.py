"""What every work source gives: work items with a stable id."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from swell.errors import SwellError


class SourceError(SwellError):
    """A work source that cannot be read (bad URI, missing file, a failing forge CLI)."""


@dataclass(frozen=True)
class WorkItem:
    """One piece of work: `id` is stable across polls (the dispatch key's item), `input`
    becomes the run's input, `labels` are what routing rules' `match_labels` and
    `input.label_filter` look at."""

    id: str
    input: str
    labels: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()  # the item's forge labels (`input.label_filter`)


class Source(Protocol):
    """A work source: `uri` names it in dispatch keys; `poll` lists its items now (an
    item seen before is listed again: the dispatcher skips what it dispatched)."""

    uri: str

    def poll(self) -> list[WorkItem]: ...


def params(text: str, uri: str) -> dict[str, str]:
    """`k=v,k=v` (Wave's continuous-mode parameters); SourceError naming a bad pair."""
    found: dict[str, str] = {}
    for pair in text.split(","):
        pair = pair.strip()
        if not pair:
            continue
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SourceError(f"work source {uri}: `{pair}` is not key=value")
        found[key.strip()] = value.strip()
    return found
