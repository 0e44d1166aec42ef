"""Step `retry:` — how many attempts, and how long to wait between them."""

from __future__ import annotations

from swell.manifest.durations import parse_duration
from swell.manifest.models import Retry

# Wave's named retry policies: max attempts, backoff, base delay, max delay
PRESETS = {
    "none": (1, "fixed", 0.0, 0.0),
    "standard": (3, "exponential", 1.0, 30.0),
    "aggressive": (5, "exponential", 0.2, 30.0),
    "patient": (3, "exponential", 5.0, 90.0),
}


def retry_delay(retry: Retry | None, attempt: int) -> float | None:
    """Seconds to wait before attempt `attempt + 1`, or None when attempts are used up."""
    if retry is None:
        return None
    _, backoff, base, cap = PRESETS.get(retry.policy or "", (1, "linear", 1.0, 60.0))
    if attempt >= max_attempts(retry):
        return None
    if retry.base_delay is not None:
        base = parse_duration(retry.base_delay)
    if retry.max_delay is not None:
        cap = parse_duration(retry.max_delay)
    backoff = retry.backoff or backoff
    if backoff == "fixed":
        delay = base
    elif backoff == "exponential":
        delay = base * 2 ** (attempt - 1)
    else:
        delay = base * attempt
    return min(delay, cap)


def max_attempts(retry: Retry | None, default: int = 1) -> int:
    """Attempts in all (the first included): `max_attempts`, else the policy's, else `default`."""
    if retry is None:
        return default
    if retry.max_attempts:
        return retry.max_attempts
    return PRESETS[retry.policy][0] if retry.policy in PRESETS else default
