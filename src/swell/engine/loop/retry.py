"""Step `retry:` — how many attempts, how long to wait between them, and which
attempt a visit is.

Each attempt the engine retries is a visit of its own, queued by a `retry.requested`
event; an attempt is counted from those events (`attempt_of`), so a resumed run
continues the count instead of starting it again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from swell.engine.loop.graph import Activation
from swell.events.models import RetryRequested
from swell.manifest.durations import parse_duration
from swell.manifest.models import Retry

if TYPE_CHECKING:
    from swell.engine.loop.state import RunState

# Wave's named retry policies: max attempts, backoff, base delay, max delay
PRESETS = {
    "none": (1, "fixed", 0.0, 0.0),
    "standard": (3, "exponential", 1.0, 30.0),
    "aggressive": (5, "exponential", 0.2, 30.0),
    "patient": (3, "exponential", 5.0, 90.0),
}
DEFAULT_MAX_DELAY = 60.0  # runtime.timeouts.retry_max_delay_seconds when it is not set


def retry_max_delay(configured: float | None) -> float:
    """runtime.timeouts.retry_max_delay_seconds: the cap of a step's backoff that sets none."""
    return DEFAULT_MAX_DELAY if configured is None else configured


def delay_before(retry: Retry | None, attempt: int, max_delay: float = DEFAULT_MAX_DELAY) -> float:
    """Seconds to wait before attempt `attempt` (2 = the first retry), as Wave computes
    it: the base delay (fixed), base·k (linear, the default) or base·2^(k-1)
    (exponential), capped at `max_delay` (the policy's, the step's, else `max_delay`).
    No `retry:`: no wait."""
    if retry is None or attempt < 2:
        return 0.0
    _, backoff, base, cap = PRESETS.get(retry.policy or "", (1, "linear", 1.0, max_delay))
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


def retry_of(state: RunState, step_id: str, activation: Activation) -> RetryRequested | None:
    """The `retry.requested` a visit carries out: the step's last one, when the visit
    was queued by it — or queued again after that visit was interrupted, which keeps
    its source — else None (a first attempt: a loop's next visit, a rework)."""
    retry = state.retries.get(step_id)
    if retry is None or activation.source_step != step_id:
        return None
    return retry if activation.source_visit == retry.visit else None


def attempt_of(state: RunState, step_id: str, activation: Activation) -> int:
    """Which attempt of its step a visit is (1: the first)."""
    retry = retry_of(state, step_id, activation)
    return retry.attempt if retry is not None else 1
