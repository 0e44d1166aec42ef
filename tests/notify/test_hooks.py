"""Wave's lifecycle `hooks` as notifications: HTTP POSTs and commands on run start,
step end, a gate waiting and run end; retried with backoff; recorded in
`.swell/hooks.log`; a receiver that is down or hangs never fails or holds up a run."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from conftest import run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline
from notify.receiver import receiver
from swell.store.location import state_dir_for


def _pipeline(hooks: str, name: str = "notified") -> str:
    return f"""kind: WavePipeline
metadata: {{name: {name}}}
hooks:
{hooks}
steps:
  - id: build
    type: command
    script: echo built
  - id: ship
    type: command
    dependencies: [build]
    script: echo shipped
"""


def _http(url: str, *events: str) -> str:
    return "".join(
        f"  - {{name: tell-{e}, event: {e}, type: http, url: '{url}'}}\n" for e in events
    )


def _log(project: Path) -> list[dict[str, Any]]:
    path = state_dir_for(project) / "hooks.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # nothing listens there once closed


def test_a_receiver_that_is_down_does_not_fail_the_run(project: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/hook"
    write_pipeline(project, "notified", _pipeline(_http(url, "run_start", "run_completed")))
    done = swell("run", "notified", cwd=project)
    assert done.returncode == 0, done.stderr
    run_id = run_id_of(done.stdout)
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"
    # the tries outlast the command's grace: they go on in a process of their own
    assert f"hook notification(s) of run {run_id} still going out in the background" in (
        done.stderr
    )
    wait_for(lambda: len(_log(project)) == 2, 60)
    failed = {(r["event"], r["ok"], r["attempts"]) for r in _log(project)}
    assert failed == {("run_start", False, 4), ("run_completed", False, 4)}
    assert all("ConnectError" in r["error"] for r in _log(project))
    outbox = state_dir_for(project) / "hooks-outbox"
    wait_for(lambda: not list(outbox.iterdir()))  # the drainer cleaned up after itself


def test_a_receiver_that_hangs_does_not_hold_up_the_run(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # on a loaded machine neither a held try may time out and be sent again, nor the
    # process's grace end (handing the held ones to a drainer, which sends them again)
    # before the receiver is released: each notification is then sent exactly once
    monkeypatch.setenv("SWELL_HOOK_GRACE", "120")
    with receiver() as got:
        got.hold()  # answers nothing until released
        hooks = _http(got.url, "run_start", "step_completed", "run_completed")
        hooks = hooks.replace("type: http,", "type: http, timeout: 5m,")
        write_pipeline(project, "notified", _pipeline(hooks))
        proc = start_swell("run", "notified", cwd=project)
        run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
        # the run ends while its first notification still waits for an answer
        wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
        # each hook has sent its first request, and none has been answered
        wait_for(lambda: len(got.bodies) == 3)
        assert _log(project) == []
        got.release.set()
        proc.communicate(timeout=60)
        wait_for(lambda: len(got.bodies) == 4)
    kinds = [(b["type"], b["step_id"]) for b in got.bodies]
    assert sorted(kinds) == [
        ("run_completed", ""),
        ("run_start", ""),
        ("step_completed", "build"),
        ("step_completed", "ship"),
    ]
    # one hook's notifications go out in order: ship's waited for build's answer
    assert [s for k, s in kinds if k == "step_completed"] == ["build", "ship"]
    assert all(r["ok"] for r in _log(project))
    [finished] = got.of("run_completed")
    assert finished["status"] == "succeeded" and finished["run_id"] == run_id


def test_a_gate_waiting_sends_one_notification(project: Path) -> None:
    with receiver() as got:
        manifest = project / "wave.yaml"
        hook = f"  - {{name: ask, event: gate_waiting, type: http, url: '{got.url}'}}\n"
        manifest.write_text(manifest.read_text() + "\nhooks:\n" + hook)
        proc = start_swell("run", "review", "--input", "v7", "--wait", cwd=project)
        run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
        wait_for(lambda: got.of("gate_waiting"), 60)
        done = swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
        assert done.returncode == 0, done.stderr
        proc.communicate(timeout=60)
    [told] = got.bodies
    assert told["type"] == "gate_waiting" and told["run_id"] == run_id
    assert told["step_id"] == "approve"
    assert told["gate"]["message"] == "Ship the change for v7?"
    assert [c["key"] for c in told["gate"]["choices"]] == ["ship", "rework", "drop"]
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


def test_a_failing_receiver_is_tried_again_until_it_answers(project: Path) -> None:
    with receiver(fail=2) as got:
        write_pipeline(project, "notified", _pipeline(_http(got.url, "run_completed")))
        done = swell("run", "notified", cwd=project)
        assert done.returncode == 0, done.stderr
        wait_for(lambda: _log(project), 60)  # in the run's process, or the drainer's
    assert got.answered == [500, 500, 200]
    assert got.bodies[0] == got.bodies[1] == got.bodies[2]
    [record] = _log(project)
    # the receiver saw exactly three tries; on a loaded machine a try may also time out
    # on the way (counted, never reaching it), so at least three
    assert record["ok"] is True and record["attempts"] >= 3
    assert record["hook"] == "tell-run_completed"
    assert "warning: hook" not in done.stderr


def test_http_hooks_are_signed_when_a_secret_is_set(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/service.md: X-Wave-Signature-256 is the HMAC-SHA256 of the body sent, with
    SWELL_HOOK_SECRET_<NAME>, else SWELL_HOOK_SECRET; without a secret none is sent."""
    monkeypatch.setenv("SWELL_HOOK_SECRET", "shared-secret")
    monkeypatch.setenv("SWELL_HOOK_SECRET_TELL_RUN_COMPLETED", "its-own-secret")
    with receiver() as got:
        hooks = _http(got.url, "run_start", "run_completed")
        write_pipeline(project, "notified", _pipeline(hooks))
        assert swell("run", "notified", cwd=project).returncode == 0
        wait_for(lambda: len(_log(project)) == 2, 60)
        monkeypatch.delenv("SWELL_HOOK_SECRET")
        monkeypatch.delenv("SWELL_HOOK_SECRET_TELL_RUN_COMPLETED")
        write_pipeline(project, "notified", _pipeline(_http(got.url, "run_start")))
        assert swell("run", "notified", cwd=project).returncode == 0
        wait_for(lambda: len(_log(project)) == 3, 60)
    signed = {json.loads(raw)["type"]: (raw, headers) for raw, headers in got.raw[:2]}
    for kind, secret in (("run_start", "shared-secret"), ("run_completed", "its-own-secret")):
        raw, headers = signed[kind]
        mac = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
        assert headers["x-wave-signature-256"] == f"sha256={mac}"
    assert "x-wave-signature-256" not in got.raw[2][1]


def test_a_command_hook_gets_the_event_on_stdin_and_in_its_environment(project: Path) -> None:
    (project / "record.py").write_text(
        "import json, os, sys\n"
        "event = json.load(sys.stdin)\n"
        "with open('told.jsonl', 'a') as out:\n"
        "    out.write(json.dumps([os.environ['WAVE_HOOK_EVENT'], event]) + '\\n')\n"
    )
    hooks = (
        "  - {name: rec, event: step_failed, type: command, command: 'python3 record.py',"
        " matcher: '^bu'}\n"
    )
    text = _pipeline(hooks).replace("script: echo built", "script: echo '$(rm -rf x)'; exit 3")
    write_pipeline(project, "notified", text)
    done = swell("run", "notified", cwd=project)
    assert done.returncode != 0
    [[name, event]] = [json.loads(x) for x in (project / "told.jsonl").read_text().splitlines()]
    assert name == "step_failed" and event["step_id"] == "build" and event["exit_code"] == 3


def test_a_hook_wave_would_refuse_is_an_error_naming_its_line(project: Path) -> None:
    hooks = (
        "  - {name: a, event: run_begin, type: http, url: 'http://127.0.0.1:9/x'}\n"
        "  - {name: b, event: run_start, type: http}\n"
        "  - {name: c, event: step_start, type: command, command: echo, matcher: '(['}\n"
    )
    write_pipeline(project, "notified", _pipeline(hooks))
    done = swell("validate", "notified", cwd=project)
    assert done.returncode == 1
    said = done.stdout + done.stderr
    assert "notified.yaml:4:22: 'event' must be one of 'run_start'" in said
    assert "notified.yaml:5:5:" in said and "`url` is required for http hooks" in said
    assert "notified.yaml:6:5:" in said and "is not a regular expression" in said
    assert "Traceback" not in said


def test_a_sub_pipeline_runs_its_own_hooks_as_wave_does(project: Path) -> None:
    """Wave gives a sub-pipeline run an executor of its own, whose hooks are the
    manifest's and its own pipeline's (executor_composition.go): its own pipeline's
    hooks hear its run, the parent's hear the parent's run, the manifest's both."""
    with receiver() as got:
        manifest = project / "wave.yaml"
        manifest.write_text(
            manifest.read_text()
            + f"\nhooks:\n  - {{name: all-ends, event: run_completed, type: http, url: '{got.url}'}}\n"
        )
        inner = _pipeline(_http(got.url, "run_start", "step_completed"), name="inner")
        write_pipeline(project, "inner", inner)
        outer = f"""kind: WavePipeline
metadata: {{name: outer}}
hooks:
{_http(got.url, "run_start")}
steps:
  - {{id: sub, pipeline: inner}}
"""
        write_pipeline(project, "outer", outer)
        done = swell("run", "outer", cwd=project)
        assert done.returncode == 0, done.stderr
        outer_id = run_id_of(done.stdout)
        [child] = [r for r in swell_json("list", cwd=project) if r["pipeline"] == "inner"]
        wait_for(lambda: len(got.bodies) >= 6)
    said = sorted((b["type"], b["pipeline"], b["run_id"], b["step_id"]) for b in got.bodies)
    assert said == [
        ("run_completed", "inner", child["id"], ""),
        ("run_completed", "outer", outer_id, ""),
        ("run_start", "inner", child["id"], ""),
        ("run_start", "outer", outer_id, ""),
        ("step_completed", "inner", child["id"], "build"),
        ("step_completed", "inner", child["id"], "ship"),
    ]


def test_a_gate_in_a_sub_pipeline_is_told_once_by_the_manifests_hook(project: Path) -> None:
    """The sub-pipeline run's own observer sends the manifest's hooks; the parent's
    sends only its pipeline's for a gate of a sub-pipeline run: one notification."""
    with receiver() as got:
        manifest = project / "wave.yaml"
        hook = f"  - {{name: ask, event: gate_waiting, type: http, url: '{got.url}'}}\n"
        manifest.write_text(manifest.read_text() + "\nhooks:\n" + hook)
        outer = (
            "kind: WavePipeline\nmetadata: {name: outer}\nsteps:\n  - {id: sub, pipeline: review}\n"
        )
        write_pipeline(project, "outer", outer)
        proc = start_swell("run", "outer", "--input", "v9", "--wait", cwd=project)
        run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
        wait_for(lambda: got.of("gate_waiting"), 60)
        [child] = [r for r in swell_json("list", cwd=project) if r["pipeline"] == "review"]
        done = swell("approve", child["id"], "approve", "--choice", "ship", cwd=project)
        assert done.returncode == 0, done.stderr
        proc.communicate(timeout=60)
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"
    [told] = got.bodies
    assert (told["type"], told["run_id"], told["pipeline"]) == (
        "gate_waiting",
        child["id"],
        "review",
    )


def test_matrix_child_runs_fire_their_parents_hooks_as_wave_does(project: Path) -> None:
    """Wave's matrix child pipelines share the parent's hook runner (NewChildExecutor):
    the parent pipeline's hooks hear each child run, the child pipeline's own do not."""
    with receiver() as got:
        item = "kind: WavePipeline\nmetadata: {name: item}\n"
        item += f"hooks:\n  - {{name: own, event: run_start, type: http, url: '{got.url}?own'}}\n"
        item += "steps:\n  - {id: work, type: command, script: echo did}\n"
        write_pipeline(project, "item", item)
        fan = f"""kind: WavePipeline
metadata: {{name: fan}}
hooks:
{_http(got.url, "run_start")}
steps:
  - id: plan
    type: command
    script: "echo '[{{\\"n\\": 1}}, {{\\"n\\": 2}}]' > items.json"
  - id: fan
    dependencies: [plan]
    strategy: {{type: matrix, items_source: items.json, child_pipeline: item}}
"""
        write_pipeline(project, "fan", fan)
        done = swell("run", "fan", cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        wait_for(lambda: len(got.bodies) >= 3)
    children = {r["id"] for r in swell_json("list", cwd=project) if r["pipeline"] == "item"}
    assert len(children) == 2
    told = sorted((b["pipeline"], b["run_id"]) for b in got.bodies)  # not the item's own hook
    assert told == sorted([("fan", run_id_of(done.stdout)), *(("item", c) for c in children)])


def test_the_rate_per_url_is_a_token_bucket() -> None:
    """Twice the rate at once, then one every 1/rate seconds (an injected clock)."""
    from swell.notify.limits import Buckets

    now, slept = [0.0], []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    buckets = Buckets(lambda: 4.0, lambda: now[0], sleep)
    for _ in range(8):
        buckets.take("http://a/")
    assert slept == []  # the burst
    buckets.take("http://b/")  # another URL has its own bucket
    buckets.take("http://a/")
    buckets.take("http://a/")
    assert slept == [0.25, 0.25]
    assert Buckets(lambda: 0.0, lambda: now[0], sleep).take("http://a/") is None  # no limit


def test_a_storm_of_events_is_paced_per_url_and_step_notifications_coalesce(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """30 steps' starts and ends to one receiver at 4 requests a second (a burst of
    8), at most 3 waiting per hook: fewer requests than events, none of them a run's
    end left out, each left-out step counted in the next one delivered."""
    monkeypatch.setenv("SWELL_HOOK_RATE", "4")
    monkeypatch.setenv("SWELL_HOOK_BACKLOG", "3")
    monkeypatch.setenv("SWELL_HOOK_GRACE", "300")  # all from the run's process: one bucket
    steps = "".join(
        f"  - {{id: s{n}, type: command, script: 'true'"
        + (f", dependencies: [s{n - 1}]" if n else "")
        + "}\n"
        for n in range(30)
    )
    with receiver() as got:
        hooks = _http(got.url, "step_start", "step_completed", "run_completed")
        text = f"kind: WavePipeline\nmetadata: {{name: storm}}\nhooks:\n{hooks}steps:\n{steps}"
        write_pipeline(project, "storm", text)
        done = swell("run", "storm", cwd=project, timeout=300)
        assert done.returncode == 0, done.stderr
        wait_for(lambda: got.of("run_completed"), 60)
    assert swell_json("status", run_id_of(done.stdout), cwd=project)["status"] == "succeeded"
    for kind in ("step_start", "step_completed"):
        told = got.of(kind)
        assert sum(1 + b.get("coalesced", 0) for b in told) == 30  # each sent or counted
    assert len(got.bodies) < 61  # coalesced: fewer requests than events
    # a token bucket lets through at most 8 + 4 a second over the whole storm; a slow
    # machine only stretches the span (+2: the first and last arrivals' jitter)
    span = max(got.at) - min(got.at)
    assert len(got.at) <= 8 + 4 * span + 2, (len(got.at), span)
    logged = _log(project)
    assert sum(r.get("coalesced", 0) for r in logged) == 61 - len(got.bodies)
