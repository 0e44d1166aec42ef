"""`file:queue.jsonl` (an item per line) and `dir:PATH` (an item per file)."""

from __future__ import annotations

import json
from pathlib import Path

from swell.service.sources.base import SourceError, WorkItem


class QueueFile:
    """A JSON-lines queue, appended to by whoever has work. A line that is a JSON object
    is an item: `id` (required, stable), `input` (else the line itself), `labels` (a
    mapping, or a list of tags). Any other line is an item whose id and input are the
    line, as in Wave's `file:` source. A missing file is an empty queue; a last line
    without its newline is still being written and waits for the next poll."""

    def __init__(self, path: Path, uri: str) -> None:
        self.path, self.uri = path, uri

    def poll(self) -> list[WorkItem]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"work source {self.uri}: cannot read {self.path}: {exc}") from None
        if not text.endswith("\n"):
            text = text.rpartition("\n")[0]  # a line being written is read next time
        return [
            _line_item(line.strip(), self.uri, n)
            for n, line in enumerate(text.splitlines(), start=1)
            if line.strip()
        ]


def _line_item(line: str, uri: str, n: int) -> WorkItem:
    if not line.startswith("{"):
        return WorkItem(id=line, input=line)
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SourceError(f"work source {uri}: line {n} is not JSON: {exc}") from None
    item_id = data.get("id")
    if item_id in (None, ""):
        raise SourceError(f"work source {uri}: line {n} has no `id` (each item needs one)")
    raw = data.get("input", line)
    labels, tags = _labels(data.get("labels"))
    text = raw if isinstance(raw, str) else json.dumps(raw)
    return WorkItem(id=str(item_id), input=text, labels=labels, tags=tags)


def _labels(value: object) -> tuple[dict[str, str], tuple[str, ...]]:
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}, ()
    if isinstance(value, list):
        tags = tuple(str(v) for v in value)
        return {"labels": ",".join(tags)}, tags
    return {}, ()


class Directory:
    """A directory of files: each regular file is an item, its name the id and its text
    the input. Hidden files (`.name`) are skipped, so a writer writes `.name` and
    renames it into place (atomic, as a maildir does) and no half-written file is read."""

    def __init__(self, path: Path, uri: str) -> None:
        self.path, self.uri = path, uri

    def poll(self) -> list[WorkItem]:
        if not self.path.is_dir():
            raise SourceError(f"work source {self.uri}: {self.path} is not a directory")
        items = []
        for entry in sorted(self.path.iterdir()):
            if entry.name.startswith(".") or not entry.is_file():
                continue
            try:
                text = entry.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise SourceError(f"work source {self.uri}: cannot read {entry}: {exc}") from None
            items.append(WorkItem(id=entry.name, input=text, labels={"file": entry.name}))
        return items
