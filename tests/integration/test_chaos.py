"""Chaos: the process executing a run is killed (-9) at random moments, again and
again, and every time two `swell resume` race to continue it. Exactly one may execute
it; no visit may run twice; nothing stored may be lost."""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from conftest import events, run_id_of, start_swell, swell, swell_json, write_pipeline

CYCLES = 30
ROUNDS = 1500  # more loop rounds than the cycles can use up, so the run outlives them

LOOP = f"""
kind: WavePipeline
metadata: {{name: chaos}}
max_step_visits: 5000
steps:
  - id: work
    max_visits: 2000
    script: |
      echo "$SWELL_STEP_ID $SWELL_VISIT" >> ran.log
      sleep 0.0$(( $$ % 5 ))
      prev={{{{ context.n }}}}
      echo "{{\\"n\\": $(( ${{prev:-0}} + 1 ))}}"
    output:
      context:
        n: "{{{{ n }}}}"
  - id: check
    dependencies: [work]
    max_visits: 2000
    script: |
      echo "$SWELL_STEP_ID $SWELL_VISIT" >> ran.log
      [ -f stop ] && exit 0
      # a different error each round: the circuit breaker must not stop the loop
      [ {{{{ context.n }}}} -ge {ROUNDS} ] || {{ echo "at_round_{{{{ context.n }}}}" >&2; exit 1; }}
    edges:
      - {{target: _complete, condition: outcome=success}}
      - {{target: work}}
"""


def _exited(procs: list[subprocess.Popen[str]], timeout: float = 60) -> subprocess.Popen[str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for proc in procs:
            if proc.poll() is not None:
                return proc
        time.sleep(0.02)
    raise AssertionError("no resume ended")


@pytest.mark.slow
def test_kill_9_and_racing_resumes_never_run_a_visit_twice(
    project: Path, isolated_state: Path
) -> None:
    rng = random.Random(1124)
    write_pipeline(project, "chaos", LOOP)
    executor = start_swell("run", "chaos", cwd=project)
    run_id = run_id_of(executor.stdout.readline())  # type: ignore[union-attr]
    losers: list[str] = []
    cycles = 0
    while cycles < CYCLES:
        time.sleep(rng.uniform(0.05, 0.7))
        executor.kill()  # kill -9, wherever it is
        executor.communicate(timeout=10)
        if swell_json("status", run_id, cwd=project)["status"] == "succeeded":
            break
        racers = [start_swell("resume", run_id, cwd=project) for _ in range(2)]
        first = _exited(racers)
        _, err = first.communicate()
        assert first.returncode == 4, err
        assert "Traceback" not in err
        losers.append(err.strip())
        (executor,) = [p for p in racers if p is not first]
        cycles += 1

    (isolated_state / "workspaces" / run_id / "stop").write_text("")
    executor.kill()
    executor.communicate(timeout=10)
    final = swell("resume", run_id, cwd=project)
    assert final.returncode == 0, final.stdout + final.stderr

    assert cycles == CYCLES
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
    # what the steps themselves saw: every visit ran once at most (an interrupted
    # visit is run again as a new visit, with its own number)
    ran = Counter(
        tuple(line.split())
        for line in (isolated_state / "workspaces" / run_id / "ran.log").read_text().splitlines()
    )
    assert max(ran.values()) == 1, [k for k, n in ran.items() if n > 1]
    assert set(ran) <= {(s, str(v)) for s, v in started}
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "succeeded" and status["stale"] is False
    print(json.dumps({"cycles": cycles, "visits": len(started), "events": len(evs)}))
