"""Durations as written in manifests: `90`, `90s`, `5m`, `2h`, `1h30m`, `500ms`."""

from __future__ import annotations

import re

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# a century: longer than anything swell waits for, and far inside what clocks, timers
# and datetime can count (99999999999999d overflowed them: a traceback, not an error)
MAX_SECONDS = 100 * 365 * 86400.0


class DurationTooLong(ValueError):
    """A duration past MAX_SECONDS."""


def parse_duration(value: str | int | float) -> float:
    """Seconds in `value`; a bare number means seconds. Raises ValueError if malformed."""
    if isinstance(value, bool):
        raise ValueError(f"invalid duration {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"duration must not be negative: {value}")
        return _bounded(float(value), value)
    text = value.strip().replace(" ", "")
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        return _bounded(float(text), value)
    pos, total = 0, 0.0
    for match in _PART.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ValueError(f"invalid duration {value!r} (use e.g. 30s, 5m, 2h)")
    return _bounded(total, value)


def _bounded(seconds: float, value: object) -> float:
    if not seconds <= MAX_SECONDS:  # NaN too
        shown = repr(value) if len(str(value)) <= 40 else repr(f"{str(value)[:37]}...")
        raise DurationTooLong(f"duration {shown} is too long (at most 100 years)")
    return seconds
