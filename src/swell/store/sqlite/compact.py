"""How SQLite keeps events compactly: one integer key, and times as integers.

An event row's key is `event_id(num, seq)`: the run's number (`event_runs.num`, given
the first time a run stores an event) in the high bits and the event's seq in the low
32, as the table's INTEGER PRIMARY KEY. A run's events are one range of keys in seq
order, and the events of the run being written are appended at the end of the table,
which SQLite does in place (a WITHOUT ROWID table keyed by run id and seq rewrites
two or three pages a commit, and repeats the run id in every row).

Events are stamped `2026-11-24T10:00:00.123Z` (`events.models.now_iso`): 24 bytes of
text in every event row, where the same instant as milliseconds since the epoch takes
6. `pack_ts` gives the integer only when `unpack_ts` turns it back into exactly the
same text; any other value (a test's "t", another format) is kept as it is. The
`events.ts` column has no type affinity, so SQLite keeps each as it was given.
"""

from __future__ import annotations

import re
from datetime import date, timedelta
from functools import lru_cache

SEQ_BITS = 32
SEQS = 1 << SEQ_BITS  # seqs a run can have: 0 <= seq < SEQS
_SEQ_MASK = SEQS - 1


def event_id(num: int, seq: int) -> int:
    """The key of event `seq` of run number `num`."""
    return (num << SEQ_BITS) | seq


def seq_of(event_id: int) -> int:
    return event_id & _SEQ_MASK


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z", re.ASCII)
_DAY_MS = 86_400_000
_EPOCH = date(1970, 1, 1)


@lru_cache(maxsize=64)
def _day_ms(day: str) -> int:
    """Milliseconds since the epoch at the start of `day` (YYYY-MM-DD); ValueError if none."""
    return (date.fromisoformat(day) - _EPOCH).days * _DAY_MS


@lru_cache(maxsize=64)
def _day_text(days: int) -> str:
    return (_EPOCH + timedelta(days=days)).isoformat()


def pack_ts(ts: str) -> int | str:
    """The stored form of an event's `ts`."""
    if len(ts) != 24 or not _STAMP.fullmatch(ts):
        return ts
    try:
        day = _day_ms(ts[:10])
    except ValueError:  # a day that does not exist
        return ts
    hours, minutes, seconds, ms = int(ts[11:13]), int(ts[14:16]), int(ts[17:19]), int(ts[20:23])
    return day + ((hours * 60 + minutes) * 60 + seconds) * 1000 + ms


def unpack_ts(stored: int | str) -> str:
    """An event's `ts` from its stored form."""
    if isinstance(stored, str):
        return stored
    days, ms = divmod(stored, _DAY_MS)
    seconds, ms = divmod(ms, 1000)
    minutes, seconds = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{_day_text(days)}T{hours:02d}:{minutes:02d}:{seconds:02d}.{ms:03d}Z"
