"""`swell logs --errors --tail --since`, `swell artifacts --step --export`,
`swell cancel --force`, and the newest run as their default."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import (
    process_gone,
    run_id_of,
    start_swell,
    swell,
    swell_json,
    wait_for,
    write_pipeline,
)


def loop_run(project: Path) -> str:
    result = swell("run", "loop", "--input", "x", cwd=project)
    assert result.returncode == 0, result.stderr
    return run_id_of(result.stdout)


def test_logs_errors_keeps_only_what_went_wrong(project: Path) -> None:
    run_id = loop_run(project)
    result = swell("logs", run_id, "--errors", cwd=project)
    assert result.returncode == 0
    lines = [ln for ln in result.stdout.splitlines() if not ln.startswith("    ")]
    assert len(lines) == 2 and all("✗ run-tests" in ln for ln in lines), result.stdout
    assert "found 1" in result.stdout and "found 2" in result.stdout
    as_json = swell("logs", run_id, "--errors", "-o", "json", cwd=project)
    kinds = {(e["type"], e.get("outcome")) for e in map(json.loads, as_json.stdout.splitlines())}
    assert kinds == {("step.finished", "failure")}


def test_logs_tail_and_since(project: Path) -> None:
    run_id = loop_run(project)
    everything = swell("logs", run_id, cwd=project).stdout.splitlines()
    tail = swell("logs", run_id, "--tail", "2", cwd=project).stdout.splitlines()
    assert tail == everything[-2:]
    assert "run succeeded" in tail[-1]
    as_json = swell("logs", run_id, "-n", "3", "-o", "json", cwd=project).stdout.splitlines()
    assert [json.loads(line)["type"] for line in as_json][-1] == "run.finished"
    assert len(as_json) == 3
    assert swell("logs", run_id, "--since", "10m", cwd=project).stdout.splitlines() == everything
    assert (
        swell("logs", run_id, "--since", "2000-01-01T00:00:00Z", cwd=project).stdout.splitlines()
        == everything
    )
    assert swell("logs", run_id, "--since", "2999-01-01T00:00:00Z", cwd=project).stdout == ""
    bad = swell("logs", run_id, "--since", "yesterday", cwd=project)
    assert bad.returncode == 2 and "--since" in bad.stderr
    # combined with --step: that step's events and output only
    step = swell("logs", run_id, "--step", "run-tests", "--errors", "--tail", "1", cwd=project)
    assert step.stdout.splitlines()[0].endswith("exit 1")
    assert "    | FAIL test_greeting: expected 3 attempts, found 2" in step.stdout


def test_logs_and_artifacts_default_to_the_newest_run(project: Path) -> None:
    loop_run(project)
    newest = loop_run(project)
    logs = swell("logs", "-o", "json", cwd=project)
    assert {json.loads(line)["run_id"] for line in logs.stdout.splitlines()} == {newest}
    arts = swell_json("artifacts", cwd=project)
    assert arts and all(newest in a["path"] for a in arts)


def test_nothing_to_default_to(project: Path) -> None:
    for command in ("logs", "artifacts", "cancel"):
        result = swell(command, cwd=project)
        assert result.returncode == 1
        assert "no runs yet" in result.stderr


def test_artifacts_of_one_step_and_their_export(project: Path, tmp_path: Path) -> None:
    run_id = loop_run(project)
    rows = swell_json("artifacts", run_id, "--step", "run-tests", cwd=project)
    assert {(r["step_id"], r["visit"]) for r in rows} == {
        ("run-tests", 1),
        ("run-tests", 2),
        ("run-tests", 3),
    }
    text = swell("artifacts", run_id, "--step", "nope", cwd=project)
    assert "no artifacts of step 'nope'" in text.stdout
    out = tmp_path / "export"
    result = swell("artifacts", run_id, "--export", str(out), cwd=project)
    assert result.returncode == 0, result.stderr
    assert "exported 2 files to" in result.stdout
    assert (out / "run-tests" / "output.log").read_text().startswith('{"passed": true')
    assert (out / "implement" / "output.log").read_text() == "implemented attempt 3\n"
    one = swell(
        "artifacts", run_id, "--step", "implement", "--export", str(tmp_path / "one"), cwd=project
    )
    assert one.returncode == 0
    assert [p.name for p in (tmp_path / "one").iterdir()] == ["implement"]


def test_export_never_follows_links(project: Path, tmp_path: Path, isolated_state: Path) -> None:
    write_pipeline(
        project,
        "plant",
        """
kind: WavePipeline
steps:
  - id: make
    script: echo report > report.txt && echo made
    output_artifacts:
      - {name: report, path: report.txt}
""",
    )
    run_id = run_id_of(swell("run", "plant", cwd=project).stdout)
    (report,) = [a for a in swell_json("artifacts", run_id, cwd=project) if a["name"] == "report"]
    secret = tmp_path / "secret.txt"
    secret.write_text("secret\n")
    # a run that kept no copy of its versions (one from before they were kept): only the
    # recorded file can be exported
    shutil.rmtree(isolated_state / "runs" / run_id / "versions")
    # after the run, its artifact becomes a link to a file outside the workspace
    Path(report["path"]).unlink()
    Path(report["path"]).symlink_to(secret)
    # and the export directory holds a link where the file would go
    out = tmp_path / "out"
    (out / "make").mkdir(parents=True)
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched\n")
    (out / "make" / "output.log").symlink_to(victim)
    result = swell("artifacts", run_id, "--export", str(out), cwd=project)
    assert result.returncode == 1
    assert "not exported: make/report:" in result.stderr and "symbolic link" in result.stderr
    assert not (out / "make" / "report.txt").exists()
    assert victim.read_text() == "untouched\n"  # the link was replaced, not written through
    assert not (out / "make" / "output.log").is_symlink()
    assert (out / "make" / "output.log").read_text() == "made\n"
    # a file whose content changed since the run is not copied either
    Path(report["path"]).unlink()
    Path(report["path"]).write_text("tampered\n")
    again = swell("artifacts", run_id, "--export", str(tmp_path / "again"), cwd=project)
    assert "changed since the run wrote it" in again.stderr


TRAPPED = """
kind: WavePipeline
steps:
  - id: stubborn
    script: |
      trap '' TERM
      echo "stubborn-marker-{tag}"
      sleep 120
"""


def test_cancel_force_kills_a_run_that_does_not_stop(project: Path, tmp_path: Path) -> None:
    tag = tmp_path.name
    text = (project / "wave.yaml").read_text()
    # swell itself waits a minute for a step that ignores SIGTERM before it kills it
    text = text.replace("runtime:\n", "runtime:\n  timeouts: {process_grace_seconds: 60}\n")
    (project / "wave.yaml").write_text(text)
    write_pipeline(project, "stubborn", TRAPPED.format(tag=tag))
    proc = start_swell("run", "stubborn", cwd=project)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().split()[1]
    wait_for(lambda: not process_gone(f"stubborn-marker-{tag}"))
    owner = wait_for(lambda: swell_json("status", run_id, cwd=project)["owner"])
    result = swell("cancel", run_id, "--force", "--grace", "1", cwd=project, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"killed process {owner['pid']}" in result.stdout
    assert f"cancelled run {run_id}" in result.stdout
    proc.wait(timeout=30)
    proc.communicate()
    assert swell_json("status", run_id, cwd=project)["status"] == "cancelled"
    wait_for(lambda: process_gone(f"stubborn-marker-{tag}"), timeout=30)
    assert not os.path.exists(f"/proc/{owner['pid']}") or proc.returncode is not None


def test_cancel_without_force_says_how_to_force(project: Path, tmp_path: Path) -> None:
    tag = tmp_path.name
    text = (project / "wave.yaml").read_text()
    text = text.replace("runtime:\n", "runtime:\n  timeouts: {process_grace_seconds: 60}\n")
    (project / "wave.yaml").write_text(text)
    write_pipeline(project, "stubborn", TRAPPED.format(tag=tag))
    proc = start_swell("run", "stubborn", cwd=project)
    assert proc.stdout is not None
    run_id = proc.stdout.readline().split()[1]
    wait_for(lambda: not process_gone(f"stubborn-marker-{tag}"))
    try:
        result = swell("cancel", cwd=project, timeout=60)  # the newest run
        assert result.returncode == 1
        assert f"`swell cancel {run_id} --force` kills it" in result.stdout
    finally:
        forced = swell("cancel", run_id, "--force", "--grace", "0", cwd=project, timeout=60)
        proc.communicate(timeout=30)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert f"cancelled run {run_id}" in forced.stdout
    wait_for(lambda: process_gone(f"stubborn-marker-{tag}"), timeout=30)


def test_logs_of_a_run_longer_than_a_page_print_every_event_once(project: Path) -> None:
    """`swell logs` reads a run a page at a time (cli/history.py): 2,500 events, each
    printed once and in order, as NDJSON and as text, and `--tail` keeps the last."""
    from swell.events import models as ev
    from swell.store.location import open_project_store

    store = open_project_store(project)
    run_id = "long-20261127-000000-logs"
    store.create_run(run_id=run_id, pipeline="long", input_text="", workspace=str(project))
    events: list[ev.BaseEvent] = [ev.RunStarted(pipeline="long", workspace=str(project))]
    events += [ev.Warning(message=f"note {n}") for n in range(2, 2501)]
    for seq, event in enumerate(events, 1):
        event.run_id, event.seq, event.ts = run_id, seq, "2026-11-27T00:00:00.000Z"
    store.emit(events)
    store.close()
    lines = swell("logs", run_id, "-o", "json", cwd=project).stdout.splitlines()
    assert [json.loads(line)["seq"] for line in lines] == list(range(1, 2501))
    text = swell("logs", run_id, "--all", cwd=project).stdout
    assert [n for n in range(2, 2501) if f"note {n}\n" not in text] == []
    assert text.index("note 999\n") < text.index("note 1000\n") < text.index("note 1001\n")
    tail = swell("logs", run_id, "--tail", "2", "-o", "json", cwd=project).stdout.splitlines()
    assert [json.loads(line)["message"] for line in tail] == ["note 2499", "note 2500"]


def test_logs_shows_the_end_of_a_long_run_and_all_of_it_when_asked(project: Path) -> None:
    """Without --all, `swell logs` prints a long run's last 200 lines and says on stderr
    how to see them all; a short run's are all shown, with nothing said."""
    run_id = _long_run_with_output(project, 2_500)
    shown = swell("logs", run_id, cwd=project)
    assert shown.returncode == 0
    lines = shown.stdout.splitlines()
    assert len(lines) == 200 and lines[-1].endswith("warning: note 2499")
    assert lines[0].endswith("warning: note 2300")
    assert f"swell logs {run_id} --all" in shown.stderr and "2,500 events" in shown.stderr
    every = swell("logs", run_id, "--all", cwd=project).stdout.splitlines()
    assert len(every) == 2_499 and every[-200:] == lines
    errors = swell("logs", run_id, "--errors", cwd=project)
    assert errors.stdout == "" and errors.stderr == ""  # it looked back to the start
    short = swell("logs", loop_run(project), cwd=project)
    assert "run succeeded" in short.stdout.splitlines()[-1] and short.stderr == ""


# typer, imported in this process by cli/history.py, calls click functions click deprecates
@pytest.mark.filterwarnings("ignore:'click.utils.get_.*_stream' is deprecated")
def test_logs_of_a_long_run_reads_only_its_end(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The default view reads the events at the run's end (keyset, after a seq), not
    the run: 2,500 events stored, fewer than half read."""
    from swell.cli.history import show_logs
    from swell.ops.logs import LogFilter
    from swell.store.location import open_project_store

    run_id = _long_run_with_output(project, 2_500)
    store = open_project_store(project)
    read: list[int] = []
    stored_rows = store.stored_rows

    def counted(*args: Any, **kwargs: Any) -> Any:
        read.append(len(found := stored_rows(*args, **kwargs)))
        return found

    store.stored_rows = counted  # type: ignore[method-assign]
    show_logs(store, run_id, tail=200, json=False, where=LogFilter(), told=True)
    store.close()
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 200 and out[-1].endswith("note 2499")
    assert sum(read) < 1_250


def _long_run_with_output(project: Path, n: int) -> str:
    """A run of `n` events of step s0 and `n` output chunks, alternating in time."""
    from swell.events import models as ev
    from swell.store.location import open_project_store
    from swell.streaming import OutputChunk

    def ts(second: int) -> str:
        return f"2026-11-27T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"

    store = open_project_store(project)
    run_id = "long-20261127-000000-outs"
    store.create_run(run_id=run_id, pipeline="long", input_text="", workspace=str(project))
    events: list[ev.BaseEvent] = [ev.RunStarted(pipeline="long", workspace=str(project))]
    events += [ev.Warning(step_id="s0", visit=1, message=f"note {k}") for k in range(1, n)]
    for seq, event in enumerate(events, 1):
        event.run_id, event.seq, event.ts = run_id, seq, ts(2 * seq)
    store.emit(events)
    chunks = [
        OutputChunk(run_id, "s0", 1, "stdout", k, ts(2 * k + 1), f"line {k}\n")
        for k in range(1, n + 1)
    ]
    store.write_output(chunks)
    store.close()
    return run_id


def test_logs_step_and_follow_read_a_page_at_a_time_in_order(project: Path) -> None:
    """`swell logs --step` and `--follow` read events and output 1,000 at a time
    (cli/live.py), printing each once, in the order they happened."""
    run_id = _long_run_with_output(project, 2_500)
    want = [x for k in range(1, 2_501) for x in (("event", k), ("output", k))]
    for args in (["--step", "s0"], ["--follow"]):
        out = swell("logs", run_id, *args, "-o", "json", cwd=project).stdout.splitlines()
        items = [json.loads(line) for line in out]
        got = [
            ("output", i["seq"]) if i["type"] == "output" else ("event", i["seq"]) for i in items
        ]
        assert got == (want if args == ["--follow"] else want[1:]), args  # --step: s0's only
    text = swell("logs", run_id, "--step", "s0", cwd=project).stdout
    assert text.index("| line 999\n") < text.index("note 999\n") < text.index("| line 1000\n")
    tail = swell("logs", run_id, "--step", "s0", "--tail", "2", cwd=project).stdout
    assert tail.splitlines() == ["01:23:20   warning: note 2499", "    | line 2500"]


# typer, imported in this process by cli/history.py, calls click functions click deprecates
@pytest.mark.filterwarnings("ignore:'click.utils.get_.*_stream' is deprecated")
def test_logs_step_asks_the_store_for_a_page_at_most(project: Path) -> None:
    """The first read of a long run holds a page of events and one of output, never
    the whole run (it read all 2,500 chunks at once)."""
    from swell.cli.live import LogReader
    from swell.ops.logs import LogFilter
    from swell.store.location import open_project_store

    run_id = _long_run_with_output(project, 2_500)
    store = open_project_store(project)
    sizes: list[int] = []
    output, stored_rows = store.output, store.stored_rows

    def paged_output(*args: Any, **kwargs: Any) -> Any:
        sizes.append(len(found := output(*args, **kwargs)))
        return found

    def paged_rows(*args: Any, **kwargs: Any) -> Any:
        sizes.append(len(found := stored_rows(*args, **kwargs)))
        return found

    store.output, store.stored_rows = paged_output, paged_rows  # type: ignore[method-assign]
    lines = list(LogReader(store, run_id, LogFilter(step="s0"), json=False).read())
    store.close()
    assert len(lines) == 2 * 2_500 - 1 and max(sizes) == 1_000 and sum(sizes) == 5_000
