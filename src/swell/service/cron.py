"""Five-field cron expressions as Wave's scheduler reads them (internal/scheduler/
cron.go): minute hour day-of-month month day-of-week, each `*`, N, A-B, a list of
them, with `/step`; day-of-week 0-6 from Sunday; when both day fields are restricted,
either may match (Vixie cron). Evaluated in a time zone, minute by minute."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from swell.errors import SwellError

_FIELDS: tuple[tuple[str, int, int], ...] = (
    *(("minute", 0, 59), ("hour", 0, 23), ("day-of-month", 1, 31)),
    *(("month", 1, 12), ("day-of-week", 0, 6)),
)
MINUTE = timedelta(minutes=1)


class CronError(SwellError):
    """A cron expression that does not parse."""


@dataclass(frozen=True)
class Cron:
    text: str
    minute: frozenset[int]
    hour: frozenset[int]
    dom: frozenset[int]
    month: frozenset[int]
    dow: frozenset[int]
    dom_star: bool
    dow_star: bool

    def matches(self, t: datetime) -> bool:
        """Whether minute `t` (in the zone `t` carries) is a tick."""
        if t.minute not in self.minute or t.hour not in self.hour or t.month not in self.month:
            return False
        dom, dow = t.day in self.dom, (t.isoweekday() % 7) in self.dow
        if self.dom_star or self.dow_star:
            return (self.dom_star or dom) and (self.dow_star or dow)
        return dom or dow

    def latest(self, now: datetime, after: datetime) -> datetime | None:
        """The last tick at or before `now` and after `after` (both aware), if any:
        searched backwards minute by minute, so it costs at most one period."""
        t = now.replace(second=0, microsecond=0)
        while t > after:
            if self.matches(t):
                return t
            t -= MINUTE
        return None


def parse(text: str) -> Cron:
    fields = text.split()
    if len(fields) != 5:
        raise CronError(f"cron `{text}`: want 5 fields (min hour dom month dow), got {len(fields)}")
    minute, hour, dom, month, dow = (
        _field(spec, name, lo, hi, text)
        for spec, (name, lo, hi) in zip(fields, _FIELDS, strict=True)
    )
    return Cron(text, minute, hour, dom, month, dow, fields[2] == "*", fields[4] == "*")


def _field(spec: str, name: str, lo: int, hi: int, text: str) -> frozenset[int]:
    found: set[int] = set()
    for item in spec.split(","):
        found |= _item(item, lo, hi, f"cron `{text}`: {name}")
    return frozenset(found)


def _item(item: str, lo: int, hi: int, where: str) -> set[int]:
    step = 1
    if "/" in item:
        item, _, step_text = item.partition("/")
        if not step_text.isdigit() or int(step_text) < 1:
            raise CronError(f"{where}: invalid step in `{item}/{step_text}`")
        step = int(step_text)
    try:
        if item == "*":
            first, last = lo, hi
        elif "-" in item:
            a, _, b = item.partition("-")
            first, last = int(a), int(b)
            if first > last:
                raise CronError(f"{where}: inverted range `{item}`")
        else:
            first = int(item)
            last = hi if step > 1 else first
    except ValueError:
        raise CronError(f"{where}: invalid value `{item}`") from None
    if first < lo or last > hi:
        raise CronError(f"{where}: {first}-{last} is outside {lo}-{hi}")
    return set(range(first, last + 1, step))
