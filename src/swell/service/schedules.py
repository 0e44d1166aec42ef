"""`schedules:` in wave.yaml: a pipeline run at each cron tick, exactly once per tick.

A tick's run is dispatched with the key (`schedule:NAME`, the tick as UTC minute
`2026-11-28T05:00Z`, pipeline), so a tick runs once however many watchers poll it.
**Catch-up**: at each poll, the latest tick at or before now that is later than the
schedule's last dispatched tick runs, once; the ticks missed before it during a
downtime are not run one by one (Wave's scheduler fires a due schedule once and moves
its next fire past now, the same policy). A schedule that never fired counts from the
moment the watcher started. docs/service.md.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from swell.errors import SwellError
from swell.service.cron import Cron, parse
from swell.service.dispatch import (
    NotHandedOn,
    Settings,
    Tally,
    hand_on,
    orphans,
    reap_children,
    start_item,
)
from swell.store.capabilities import dispatch
from swell.store.dispatch import AlreadyDispatched, DispatchKey

if TYPE_CHECKING:
    from swell.manifest.wave_models import Schedule
    from swell.runtime import Runtime

Clock = Callable[[], datetime]


def _now() -> datetime:
    return datetime.now(UTC)


def tick_text(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%MZ")


class Schedules:
    """The project's active schedules, polled as one (`cycle`) by `swell watch`, or by
    anything that calls `cycle` now and then (`swell serve`)."""

    name = "schedules"

    def __init__(
        self, rt: Runtime, settings: Settings, say: Callable[[str], None], clock: Clock = _now
    ) -> None:
        self.rt, self.settings, self.say, self.clock = rt, settings, say, clock
        self.tally = Tally()
        self.entries = [(s, *checked(s)) for s in rt.project.manifest.schedules if s.active]
        self.since = clock()  # a schedule that never fired counts from here
        self._recovered = False

    def cycle(self) -> None:
        reap_children()
        if not self._recovered:  # ticks recorded by a watcher that died before handing on
            self._recovered = True
            for schedule, _, _ in self.entries:
                for run_id in orphans(self.rt, f"schedule:{schedule.key_name}"):
                    hand_on(self.rt, run_id, self.say)
        now = self.clock()
        for schedule, cron, zone in self.entries:
            self._fire(schedule, cron, zone, now)

    def finish(self) -> None:
        pass  # each tick's run is handed on before `cycle` returns

    def _fire(self, schedule: Schedule, cron: Cron, zone: ZoneInfo, now: datetime) -> None:
        source = f"schedule:{schedule.key_name}"
        fired = [d.item for d in dispatch(self.rt.store).dispatched(source, schedule.pipeline)]
        after = _parsed(max(fired)) if fired else self.since - timedelta(seconds=1)
        tick = cron.latest(now.astimezone(zone), after.astimezone(zone))
        if tick is None:
            return
        from swell.runtime import check_pipeline

        key = DispatchKey(source, tick_text(tick), schedule.pipeline)
        try:
            loaded, _ = check_pipeline(self.rt, schedule.pipeline)
            run_id = start_item(self.rt, loaded, schedule.input, key, self.settings)
        except AlreadyDispatched:
            return  # another watcher ran this tick
        except NotHandedOn as exc:  # recorded: `swell watch` hands it on when restarted
            self.say(f"schedule {schedule.key_name} at {key.item}: {exc}")
            self.tally.failed.append(key.item)
            return
        except SwellError as exc:
            self.say(f"schedule {schedule.key_name} at {key.item}: not started: {exc}")
            self.tally.failed.append(key.item)
            return
        self.tally.started.append(run_id)
        self.say(f"schedule {schedule.key_name} at {key.item}: run {run_id}")


def checked(schedule: Schedule) -> tuple[Cron, ZoneInfo]:
    """The schedule's cron and zone; SwellError naming the schedule when one is bad."""
    try:
        cron = parse(schedule.cron)
    except SwellError as exc:
        raise SwellError(f"schedule {schedule.key_name}: {exc}") from None
    try:
        return cron, ZoneInfo(schedule.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise SwellError(
            f"schedule {schedule.key_name}: unknown timezone `{schedule.timezone}`"
        ) from None


def _parsed(tick: str) -> datetime:
    return datetime.strptime(tick, "%Y-%m-%dT%H:%MZ").replace(tzinfo=UTC)


def run_due_schedules(rt: Runtime, settings: Settings | None = None) -> Tally:
    """One poll of the project's schedules (for `swell serve`, called every ~30 s):
    the runs it started, in its tally."""
    poller = Schedules(rt, settings or Settings(), lambda line: None)
    poller.since = poller.since - timedelta(minutes=1)  # a fresh poller: this minute's tick
    poller.cycle()
    return poller.tally
