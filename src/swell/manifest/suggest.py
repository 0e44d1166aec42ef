""" "Did you mean" for unknown names: fields, steps, personas, adapters, artifacts."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """` (did you mean 'x'?)` for the closest known name, else ``."""
    hint = difflib.get_close_matches(name, sorted(set(known)), n=1)
    return f" (did you mean '{hint[0]}'?)" if hint else ""


def unknown(what: str, name: str, known: Iterable[str]) -> str:
    """`unknown WHAT 'name' (did you mean 'x'?)`, or with the known names listed when
    none is close (and there are few enough to read)."""
    names = sorted(set(known))
    hint = did_you_mean(name, names)
    if hint or not names:
        return f"unknown {what} '{name}'{hint}"
    listed = ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")
    return f"unknown {what} '{name}' (known: {listed})"
