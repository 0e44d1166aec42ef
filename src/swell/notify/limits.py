"""How fast HTTP hooks may post to one receiver: a token bucket per URL, shared by
every hook and run of the process (a Temporal worker's runs included), so a storm of
events (a wide fan-out, many runs at once) cannot flood a receiver. Only the hook's
own delivery thread waits for a token; the run never does (docs/service.md)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

DEFAULT_RATE = 5.0  # requests a second to one URL, after a burst of twice that
DEFAULT_BACKLOG = 100  # notifications one hook may have waiting before step ones coalesce


def rate() -> float:
    """`SWELL_HOOK_RATE`: requests a second per URL (0: no limit)."""
    return _number("SWELL_HOOK_RATE", DEFAULT_RATE)


def backlog() -> int:
    """`SWELL_HOOK_BACKLOG`: notifications one hook may have waiting (at least 1)."""
    return max(1, int(_number("SWELL_HOOK_BACKLOG", DEFAULT_BACKLOG)))


def _number(name: str, default: float) -> float:
    try:
        return max(0.0, float(os.environ.get(name, default)))
    except ValueError:
        return default


class Buckets:
    """A token bucket per URL: `rate` tokens a second, holding at most `2 x rate`."""

    def __init__(
        self,
        per_second: Callable[[], float] = rate,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.per_second, self.clock, self.sleep = per_second, clock, sleep
        self.lock = threading.Lock()
        self.buckets: dict[str, tuple[float, float]] = {}  # url -> (tokens, when counted)

    def take(self, url: str) -> None:
        """Wait until `url` may be sent one more request, and count it."""
        while True:
            wait = self._try(url)
            if wait <= 0:
                return
            self.sleep(wait)

    def _try(self, url: str) -> float:
        """0 when a token was taken, else the seconds until one is there."""
        speed = self.per_second()
        if speed <= 0:
            return 0.0
        full = max(1.0, 2 * speed)
        with self.lock:
            now = self.clock()
            tokens, then = self.buckets.get(url, (full, now))
            tokens = min(full, tokens + (now - then) * speed)
            if tokens >= 1:
                self.buckets[url] = (tokens - 1, now)
                return 0.0
            self.buckets[url] = (tokens, now)
            return (1 - tokens) / speed


BUCKETS = Buckets()  # the process's
