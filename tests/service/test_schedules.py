"""`schedules:`: Wave's cron semantics, a tick run once however many watchers poll it,
and a downtime's missed ticks caught up by one run on restart (injected clock)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from conftest import swell, wait_for
from swell.runtime import open_runtime
from swell.service.cron import CronError, parse
from swell.service.dispatch import Settings
from swell.service.schedules import Schedules

from .helpers import MANIFEST, dispatched, run_facts, service_project

T0 = datetime(2026, 11, 28, 9, 58, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("expr", "when", "hit"),
    [
        ("*/15 * * * *", datetime(2026, 1, 1, 10, 45), True),
        ("*/15 * * * *", datetime(2026, 1, 1, 10, 46), False),
        ("0 9-17 * * 1-5", datetime(2026, 11, 27, 12, 0), True),  # a Friday
        ("0 9-17 * * 1-5", datetime(2026, 11, 28, 12, 0), False),  # a Saturday
        ("0 0 1 * 0", datetime(2026, 11, 29, 0, 0), True),  # dom or dow: a Sunday
        ("0 0 1 * 0", datetime(2026, 11, 1, 0, 0), True),  # ... or the 1st
        ("0 0 1 * 0", datetime(2026, 11, 2, 0, 0), False),
        ("30 2 * * *", datetime(2026, 1, 1, 2, 30), True),
        ("5/20 * * * *", datetime(2026, 1, 1, 2, 45), True),  # N/step: N to the end
    ],
)
def test_cron_matches_as_waves_scheduler(expr: str, when: datetime, hit: bool) -> None:
    assert parse(expr).matches(when) is hit


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("* * * *", "want 5 fields"),
        ("61 * * * *", "minute: 61-61 is outside 0-59"),
        ("5-1 * * * *", "inverted range"),
        ("*/0 * * * *", "invalid step"),
        ("x * * * *", "invalid value `x`"),
    ],
)
def test_a_bad_cron_is_one_clear_error(expr: str, message: str) -> None:
    with pytest.raises(CronError, match=message):
        parse(expr)


def _scheduled(root: Path, schedule: str) -> Path:
    project = service_project(root)
    (project / "wave.yaml").write_text(MANIFEST + "schedules:\n" + schedule)
    return project


class Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


def test_a_missed_tick_runs_once_on_restart_and_never_twice(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _scheduled(
        tmp_path / "p", "  - {name: hourly, pipeline: echo, cron: '0 * * * *', input: tick}\n"
    )
    monkeypatch.chdir(project)
    said: list[str] = []
    clock = Clock(T0)
    rt = open_runtime(project)
    first = Schedules(rt, Settings(), said.append, clock)
    first.cycle()
    assert said == []  # 09:58: no tick since it started
    clock.now = T0 + timedelta(minutes=2)  # 10:00:30
    first.cycle()
    first.cycle()  # the same tick again: nothing
    assert said == [f"schedule hourly at 2026-11-28T10:00Z: run {first.tally.started[0]}"]
    # down from 10:01 to 13:20: the ticks of 11:00, 12:00 and 13:00 are missed
    clock.now = datetime(2026, 11, 28, 13, 20, tzinfo=UTC)
    restarted = Schedules(open_runtime(project), Settings(), said.append, clock)
    restarted.cycle()
    restarted.cycle()
    again = Schedules(open_runtime(project), Settings(), said.append, clock)  # a second watcher
    again.cycle()
    assert said[1:] == [f"schedule hourly at 2026-11-28T13:00Z: run {restarted.tally.started[0]}"]
    clock.now = datetime(2026, 11, 28, 14, 0, 5, tzinfo=UTC)
    again.cycle()
    restarted.cycle()
    ticks = dispatched(isolated_state, "schedule:hourly")
    assert sorted(ticks) == ["2026-11-28T10:00Z", "2026-11-28T13:00Z", "2026-11-28T14:00Z"]
    assert all(len(runs) == 1 for runs in ticks.values())
    wait_for(lambda: all(f[0] == "succeeded" for f in run_facts(isolated_state).values()))
    assert {f[1] for f in run_facts(isolated_state).values()} == {"tick"}


def test_a_schedule_is_read_in_its_timezone(
    tmp_path: Path, isolated_state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _scheduled(
        tmp_path / "p",
        "  - {pipeline: echo, cron: '0 9 * * *', timezone: Europe/Berlin}\n",
    )
    monkeypatch.chdir(project)
    clock = Clock(datetime(2026, 11, 28, 7, 59, tzinfo=UTC))  # 08:59 in Berlin
    poller = Schedules(open_runtime(project), Settings(), lambda _: None, clock)
    clock.now = datetime(2026, 11, 28, 8, 0, 10, tzinfo=UTC)  # 09:00 in Berlin
    poller.cycle()
    assert list(dispatched(isolated_state, "schedule:echo")) == ["2026-11-28T08:00Z"]


BAD = """\
  - name: nightly
    pipeline: echo
    cron: "0 25 * * *"
  - pipeline: echo
    cron: "0 1 * * *"
    timezone: Mars/Base
"""


@pytest.mark.parametrize(
    "command",
    [["validate"], ["run", "echo"], ["watch", "--once"], ["serve", "--port", "0"]],
    ids=lambda c: c[0],
)
def test_a_bad_cron_or_timezone_is_refused_when_the_project_loads(
    tmp_path: Path, command: list[str]
) -> None:
    """Not first when `swell watch` starts firing the schedule: at its line."""
    project = _scheduled(tmp_path / "p", BAD)
    result = swell(*command, cwd=project, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr
    said = result.stderr.splitlines()
    errors = [line for line in said if line.startswith("wave.yaml:") and "warning" not in line]
    assert errors == [
        "wave.yaml:8:11: 'cron': cron `0 25 * * *`: hour: 25-25 is outside 0-23",
        "wave.yaml:11:15: 'timezone': unknown timezone `Mars/Base` (an IANA name: Europe/Berlin)",
    ]
    assert "Traceback" not in result.stderr
