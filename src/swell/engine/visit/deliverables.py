"""A step's `outcomes`: the deliverables it produced (WAVE.md §3.7).

After a visit succeeds, each outcome reads `extract_from` (a file of the step's
workspace) and records what `json_path` names there as an `outcome.recorded` event,
which `swell status` lists. `x[*].y` gives one outcome per element, labelled with the
element's `json_path_label` value, else "(i/n)". `file` and `artifact` outcomes
record the file's path. An outcome never fails a step: what cannot be read becomes a
warning. Unlike Wave, command steps record theirs too (Wave ignores them there).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swell.events.models import BaseEvent, OutcomeRecorded, Warning
from swell.manifest.models import Step
from swell.manifest.wave_models import Deliverable
from swell.workspace import safe

MAX_READ = 50 * 1024 * 1024  # a larger file is not read for outcomes (a warning says so)


class PathError(ValueError):
    """A JSON path that does not lead to a value."""


class EmptyList(PathError):
    """The path indexes or spreads an empty list: "no results", not a mistake."""


def _step_into(value: Any, key: str, index: str | None) -> Any:
    if not isinstance(value, dict):
        raise PathError(f"cannot look up '{key}' in a non-object")
    if key not in value:
        raise PathError(f"key '{key}' not found")
    value = value[key]
    if index is None:
        return value
    if not isinstance(value, list):
        raise PathError(f"'{key}' is not a list")
    n = int(index)
    if n >= len(value):
        if not value:
            raise EmptyList(f"no items in '{key}'")
        raise PathError(f"index {n} is out of range ('{key}' has {len(value)})")
    return value[n]


def walk(data: Any, path: str) -> Any:
    """Follow a dotted path (`.a.b[0].c`; the leading dot is optional)."""
    for part in filter(None, path.strip().lstrip(".").split(".")):
        key, _, rest = part.partition("[")
        index = rest.rstrip("]") if rest else None
        if index is not None and not index.isdigit():
            raise PathError(f"bad index '[{rest}' in '{part}'")
        data = _step_into(data, key, index) if key else data
    return data


def text(value: Any) -> str:
    """How Wave prints an extracted value: strings raw, whole numbers without a
    decimal point, objects and lists as compact JSON; null is an error."""
    if value is None:
        raise PathError("the value is null")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"))


def extract_all(data: Any, path: str) -> list[str]:
    """Every value of a `prefix[*]suffix` path, one per list element."""
    prefix, _, suffix = path.partition("[*]")
    items = walk(data, prefix) if prefix.strip(".") else data
    if not isinstance(items, list):
        raise PathError(f"'{prefix}' is not a list")
    return [text(walk(item, suffix)) for item in items]


def _inside(workspace: Path, rel: str) -> Path:
    """`rel` in the workspace; UnsafePath when it leads out of it (`..`, a link)."""
    path = (workspace / rel).resolve()
    root = workspace.resolve()
    if Path(rel).is_absolute() or root not in path.parents:
        raise safe.UnsafePath(f"path {rel!r} escapes the workspace")
    return path


def _one(outcome: Deliverable, workspace: Path, step_id: str) -> list[BaseEvent]:
    label = outcome.label or outcome.type
    where = f"outcome of step '{step_id}' ({outcome.extract_from})"
    try:
        path = _inside(workspace, outcome.extract_from)
        raw = safe.read_limited(path, MAX_READ)
    except (safe.UnsafePath, OSError) as exc:
        return [Warning(message=f"{where}: not read: {exc}")]
    if outcome.type in ("file", "artifact"):
        return [OutcomeRecorded(kind=outcome.type, label=label, value=str(path),
                                description=f"produced by step {step_id}")]  # fmt: skip
    json_path = outcome.json_path or ""
    try:
        data = json.loads(raw)
        if "[*]" not in json_path:
            value = text(walk(data, json_path))
            desc = f"from {outcome.extract_from} at {json_path}"
            return [OutcomeRecorded(kind=outcome.type, label=label, value=value, description=desc)]
        values = extract_all(data, json_path)
        labels = _labels(data, outcome.json_path_label, len(values))
    except EmptyList as exc:
        return [Warning(message=f"{where}: {exc}; nothing to record at {json_path}")]
    except (ValueError, PathError) as exc:  # json's errors are ValueErrors
        return [Warning(message=f"{where}: {json_path}: {exc}")]
    if not values:
        return [Warning(message=f"{where}: {json_path} is an empty list; nothing to record")]
    return [
        OutcomeRecorded(
            kind=outcome.type,
            label=f"{label}: {labels[i]}" if labels[i] else f"{label} ({i + 1}/{len(values)})",
            value=value,
            description=f"from {outcome.extract_from} at {json_path} [{i}]",
        )
        for i, value in enumerate(values)
    ]


def _labels(data: Any, path: str | None, count: int) -> list[str]:
    """Each element's label (`json_path_label`), "" where there is none."""
    found: list[str] = []
    if path and "[*]" in path:
        try:
            found = extract_all(data, path)
        except PathError:
            found = []
    return (found + [""] * count)[:count]


def extract(step: Step, workspace: Path) -> list[BaseEvent]:
    """The outcomes of a visit that succeeded, and a warning for each that could not be
    read (they never fail the step). Blocking: call it off the event loop."""
    return [event for outcome in step.outcomes for event in _one(outcome, workspace, step.id)]


__all__ = ["EmptyList", "PathError", "extract", "extract_all", "text", "walk"]
