"""Visit limits and the circuit breaker's error normalization."""

from __future__ import annotations

import re

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # ISO timestamps and clock times
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<ts>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    # UUIDs, long hex ids and 0x addresses
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b"), "<hex>"),
    # temp paths
    # (only at the start of a path: a project's own `app/tmp/` is not a temp dir)
    (re.compile(r"(?<![\w.~/-])(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s:'\"]*"), "<tmp>"),
    (re.compile(r"[A-Za-z]:\\[^\s:'\"]*\\Temp\\[^\s:'\"]*"), "<tmp>"),
    # file:line:col and "line N"
    (re.compile(r":\d+(?::\d+)?\b"), ":<n>"),
    (re.compile(r"\b(line|col|column)\s+\d+", re.IGNORECASE), r"\1 <n>"),
    # durations and any other number, except digits that are part of a name (`test_case_2`)
    (re.compile(r"\b\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds|m|min)\b"), "<dur>"),
    (re.compile(r"(?<![A-Za-z_\d])\d+(?:\.\d+)?"), "<n>"),
]


def normalize_error(message: str, limit: int = 2000) -> str:
    """The error with its incidental parts removed, so the same failure compares equal."""
    text = message[-limit * 2 :]
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return "\n".join(line for line in lines if line)[-limit:]
