"""`swell thread`: a run's rounds within a character budget, page by page.

Default page: the first round, then rounds from the newest backwards while they fit
the budget; the rounds in between are one "omitted" line whose hint is the command
that loads them. `before=M`: the rounds before M, newest first, down to round 2 (round
1 is on the default page). Following each hint in turn shows every round once.

The cost depends on the budget, not on the run's length: the reader fetches rounds
by id, a few at a time, from an index.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from swell.store.protocols import ThreadReader
from swell.store.rows import RoundRow


@dataclass
class Page:
    run_id: str
    thread: str | None
    total: int
    head: list[RoundRow] = field(default_factory=list)  # shown before the omitted line
    tail: list[RoundRow] = field(default_factory=list)  # shown after it
    omitted: int = 0
    load_before: int | None = None  # `--before` value that loads the omitted rounds

    def hint(self) -> str:
        thread = f" --thread {self.thread}" if self.thread else ""
        return (
            f"... {self.omitted} messages omitted (use --before {self.load_before} to load: "
            f"swell thread {self.run_id}{thread} --before {self.load_before}) ..."
        )


def render(round_: RoundRow) -> str:
    """`[#<id> <role>] <timestamp>`, `---`, metadata as YAML, `---`, content."""
    meta = (
        yaml.safe_dump(
            round_.metadata, sort_keys=False, default_flow_style=False, allow_unicode=True
        ).strip()
        if round_.metadata
        else "{}"
    )
    content = round_.content.rstrip("\n")
    return f"[#{round_.id} {round_.role or 'unknown'}] {round_.ts}\n---\n{meta}\n---\n{content}\n"


def _backwards(
    reader: ThreadReader, run_id: str, thread: str | None, start: int, stop: int
) -> Iterator[RoundRow]:
    """Rounds start, start-1, ... down to stop, fetched in growing batches."""
    batch = 8
    hi = start
    while hi >= stop:
        lo = max(stop, hi - batch + 1)
        yield from reversed(reader.rounds_between(run_id, thread, lo, hi))
        hi = lo - 1
        batch = min(batch * 2, 256)


def _fill(
    reader: ThreadReader, run_id: str, thread: str | None, start: int, stop: int, budget: int
) -> tuple[list[RoundRow], int]:
    """Newest-first rounds from start down to stop that fit `budget` (at least one),
    returned oldest first, with the characters they use."""
    taken: list[RoundRow] = []
    used = 0
    for round_ in _backwards(reader, run_id, thread, start, stop):
        size = len(render(round_))
        if taken and used + size > budget:
            break
        taken.append(round_)
        used += size
        if used >= budget:
            break
    return list(reversed(taken)), used


def retrieve(
    reader: ThreadReader,
    run_id: str,
    thread: str | None = None,
    budget: int = 8000,
    before: int | None = None,
) -> Page:
    """One page of the run's (or thread's) rounds."""
    total = reader.round_count(run_id, thread)
    page = Page(run_id, thread, total)
    if total == 0:
        return page
    if before is None:
        page.head = list(reader.rounds_between(run_id, thread, 1, 1))
        used = len(render(page.head[0]))
        if total > 1:
            page.tail, _ = _fill(reader, run_id, thread, total, 2, max(budget - used, 0))
        first_shown = page.tail[0].id if page.tail else total + 1
    else:
        start = min(before - 1, total)
        if start < 2:
            return page
        page.tail, _ = _fill(reader, run_id, thread, start, 2, budget)
        first_shown = page.tail[0].id
    page.omitted = max(first_shown - 2, 0)
    page.load_before = first_shown if page.omitted else None
    return page


def page_text(page: Page) -> str:
    """The page as `swell thread` prints it."""
    parts = [render(r) for r in page.head]
    if page.omitted:
        parts.append(page.hint() + "\n")
    parts += [render(r) for r in page.tail]
    return "\n".join(parts)


def page_json(page: Page) -> dict[str, Any]:
    def one(r: RoundRow) -> dict[str, Any]:
        return {
            "id": r.id,
            "role": r.role or "unknown",
            "ts": r.ts,
            "metadata": r.metadata,
            "content": r.content,
        }

    return {
        "run_id": page.run_id,
        "thread": page.thread,
        "total": page.total,
        "rounds": [one(r) for r in page.head + page.tail],
        "omitted": {"count": page.omitted, "before": page.load_before} if page.omitted else None,
    }
