"""The hostile-step suite under chaos: while a run's steps plant FIFOs, links out of the
workspace, links to /dev/zero and a sparse file that swell hashes, the process
executing it is killed (-9) at random moments, and each time two `swell resume` race
to continue it. Exactly one executes it (the other exits 4), no visit runs twice,
nothing stored is lost, no traceback, the canary outside the workspace is untouched,
and the run ends. SWELL_CHAOS_CYCLES sets the number of kills (10 in CI; the counts in
docs/security.md, "Attacks tried", came from longer runs)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import events, run_id_of, swell, swell_cmd, swell_json, write_pipeline

CYCLES = int(os.environ.get("SWELL_CHAOS_CYCLES", "10"))
SEED = int(os.environ.get("SWELL_CHAOS_SEED", "2811"))
ROUNDS = 5000  # more rounds than the cycles use up: the run outlives them

HOSTILE_LOOP = f"""
kind: WavePipeline
metadata: {{name: hostile-chaos}}
max_step_visits: 20000
steps:
  - id: work
    max_visits: 10000
    script: |
      echo "$SWELL_STEP_ID $SWELL_VISIT" >> ran.log
      rm -rf f.json l.json z.json s.bin .swell-artifacts/log
      mkfifo f.json
      ln -s "$CANARY" l.json
      ln -s /dev/zero z.json
      truncate -s 200M s.bin
      mkdir -p .swell-artifacts && ln -s "$CANARY" .swell-artifacts/log
      prev={{{{ context.n }}}}
      echo "{{\\"n\\": $(( ${{prev:-0}} + 1 ))}}"
    output_artifacts:
      - {{name: log, source: stdout}}
      - {{name: sparse, path: s.bin, type: binary}}
    output:
      context:
        n: "{{{{ n }}}}"
    handover:
      contracts:
        - {{type: json_schema, source: f.json, schema: '{{"type": "object"}}', on_failure: continue}}
        - {{type: non_empty_file, source: l.json, on_failure: continue}}
        - {{type: format, source: z.json, on_failure: continue}}
  - id: check
    dependencies: [work]
    max_visits: 10000
    memory: {{inject_artifacts: [{{step: work, artifact: log}}]}}
    script: |
      echo "$SWELL_STEP_ID $SWELL_VISIT" >> ran.log
      [ -f stop ] && exit 0
      [ {{{{ context.n }}}} -ge {ROUNDS} ] || {{ echo "at_round_{{{{ context.n }}}}" >&2; exit 1; }}
    edges:
      - {{target: _complete, condition: outcome=success}}
      - {{target: work}}
"""


def _start(env: dict[str, str], cwd: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        swell_cmd(*args),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
    )


def _first_to_end(procs: list[subprocess.Popen[str]], timeout: float = 60) -> subprocess.Popen[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                return proc
        time.sleep(0.02)
    raise AssertionError("no resume ended")


@pytest.mark.slow
def test_kill_9_while_hostile_steps_run_loses_nothing(project: Path, isolated_state: Path) -> None:
    rng = random.Random(SEED)
    canary = project.parent / "canary.txt"
    canary.write_bytes(b"canary\n")
    before = (canary.read_bytes(), canary.stat().st_mtime_ns)
    env = {**os.environ, "CANARY": str(canary)}
    write_pipeline(project, "hostile-chaos", HOSTILE_LOOP)
    executor = _start(env, project, "run", "hostile-chaos")
    run_id = run_id_of(executor.stdout.readline())  # type: ignore[union-attr]
    losers: list[str] = []
    cycles = 0
    while cycles < CYCLES:
        time.sleep(rng.uniform(0.2, 2.0))
        executor.kill()  # kill -9, wherever it is: in a step, a contract, a hash
        _, err = executor.communicate(timeout=10)
        assert "Traceback" not in err, err
        if swell_json("status", run_id, cwd=project)["status"] == "succeeded":
            break
        racers = [_start(env, project, "resume", run_id) for _ in range(2)]
        first = _first_to_end(racers)
        _, err = first.communicate()
        assert first.returncode == 4, err
        assert "Traceback" not in err, err
        losers.append(err.strip())
        (executor,) = [p for p in racers if p is not first]
        cycles += 1

    (isolated_state / "workspaces" / run_id / "stop").write_text("")
    executor.kill()
    executor.communicate(timeout=10)
    final = swell("resume", run_id, cwd=project, env=env, timeout=120)
    assert final.returncode == 0, final.stdout + final.stderr
    assert "Traceback" not in final.stdout + final.stderr

    assert all(f"run {run_id} is already being executed by pid" in e for e in losers), losers
    evs = events(project, run_id)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    started = Counter((e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started")
    closed = Counter(
        (e["step_id"], e["visit"])
        for e in evs
        if e["type"] in ("step.finished", "step.interrupted")
    )
    assert max(started.values()) == 1 and started == closed
    ran = Counter(
        tuple(line.split())
        for line in (isolated_state / "workspaces" / run_id / "ran.log").read_text().splitlines()
    )
    assert max(ran.values()) == 1, [k for k, n in ran.items() if n > 1]
    assert set(ran) <= {(s, str(v)) for s, v in started}
    # the planted files were never taken for good ones
    contracts = Counter(e["type"] for e in evs if e["type"].startswith("contract."))
    recorded = [e for e in evs if e["type"] == "artifact.written" and e["name"] == "log"]
    assert all(not Path(e["path"]).is_symlink() for e in recorded)
    assert (canary.read_bytes(), canary.stat().st_mtime_ns) == before, "the canary was touched"
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "succeeded" and status["stale"] is False
    print(
        json.dumps(
            {
                "cycles": cycles,
                "visits": len(started),
                "events": len(evs),
                "contracts": dict(contracts),
            }
        )
    )
