"""Times as the pages show them: relative ("3 min ago") with the exact time on hover,
and durations that keep counting while a run, a visit or a gate is still going."""

from __future__ import annotations

from datetime import UTC, datetime

from markupsafe import Markup, escape


def parse(iso: str | None) -> datetime | None:
    """An ISO 8601 time from the store (`...Z` or with an offset); None if it is not one."""
    if not iso:
        return None
    try:
        at = datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def now() -> datetime:
    return datetime.now(UTC)


def since_ms(start: str | None, end: str | None, at: datetime | None = None) -> int | None:
    """Milliseconds from `start` to `end`, or to now (`at`) while it has no end."""
    begin = parse(start)
    if begin is None:
        return None
    stop = parse(end) if end else (at or now())
    if stop is None:
        return None
    return max(0, int((stop - begin).total_seconds() * 1000))


def ms(value: int | None) -> str:
    """A duration for people: 473 ms, 12.4 s, 3 min 05 s, 2 h 14 min."""
    if value is None:
        return "-"
    if value < 1000:
        return f"{value} ms"
    if value < 60_000:
        return f"{value / 1000:.1f} s"
    seconds = value // 1000
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def relative(at: datetime, ref: datetime) -> str:
    seconds = int((ref - at).total_seconds())
    future = seconds < 0
    seconds = abs(seconds)
    if seconds < 45:
        text = "just now" if not future else "in a moment"
        return text
    for size, unit in (
        (86400 * 365, "y"),
        (86400 * 30, "mo"),
        (86400, "d"),
        (3600, "h"),
        (60, "min"),
    ):
        if seconds >= size:
            n = round(seconds / size)
            return f"in {n} {unit}" if future else f"{n} {unit} ago"
    return "just now"


def when(iso: str | None, ref: datetime | None = None) -> Markup:
    """`<time>` with a relative text and the exact UTC time as its title; app.js keeps
    the text current and shows the exact time in the reader's own zone."""
    at = parse(iso)
    if at is None:
        return Markup(escape(iso or ""))
    exact = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    stamp = at.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return Markup('<time datetime="{}" title="{}">{}</time>').format(
        stamp, exact, relative(at, ref or now())
    )
