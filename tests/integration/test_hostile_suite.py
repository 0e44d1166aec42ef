"""The hostile-step suite (issue 28, "Done when"): a step plants something hostile at a
path swell later reads or writes (in the workspace, in the run directory under
`.swell/`, in the project), and swell must

- end (no hang past `--timeout` plus grace: every run here has a hard guard),
- touch nothing outside (a canary file beside the project keeps its bytes and mtime;
  links planted here point at it),
- print no traceback, and keep its log whole (events numbered 1..n, the run final),
- clean up after itself (`swell clean` removes the workspace and leaves the canary).

What is planted (`KIND`): a FIFO, a link to the canary, a link to /dev/zero, a
socket, a character device (`mknod`, when the tests run as root) and a 50 GB sparse
file. Where (`TARGETS`): each place below. The attack table in docs/security.md
("Attacks tried") counts these cases; test_hostile_chaos.py runs them under kill -9.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conftest import swell, swell_cmd, write_pipeline

MANIFEST = """\
apiVersion: v1
kind: WaveManifest
metadata: {name: hostile}
adapters:
  replay:
    type: scripted
    options: {script: scripts/replies.yaml}
personas:
  talker: {adapter: replay, system_prompt_file: .agents/personas/talker.md}
"""

GRACE = 30  # seconds past a run's --timeout before the guard calls it a hang
SPARSE = "50G"

# a shell function every planting step defines: `plant PATH` puts $KIND at PATH
PLANT = """\
      plant() {
        rm -rf "$1"; mkdir -p "$(dirname "$1")"
        case "$KIND" in
          fifo) mkfifo "$1" ;;
          link-out) ln -s "$CANARY" "$1" ;;
          dev-zero) ln -s /dev/zero "$1" ;;
          socket) python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$1" ;;
          chardev) mknod "$1" c 1 5 ;;
          sparse) truncate -s SPARSE "$1" ;;
        esac
      }
""".replace("SPARSE", SPARSE)

KINDS = ["fifo", "link-out", "dev-zero", "socket", "chardev", "sparse"]
# a socket and a device are refused by the same check as a FIFO: tried where files are
# read as artifacts and contract sources, and left out elsewhere to keep the suite short
READ_KINDS = ["fifo", "link-out", "dev-zero", "sparse"]
WRITTEN_KINDS = ["fifo", "link-out", "dev-zero"]  # where swell writes, it replaces
STORE_LIMIT = 32 * 1024 * 1024  # bytes of state.db and its WAL after one of these runs


@dataclass(frozen=True)
class Target:
    """A path swell reads or writes, and a pipeline whose `plant` puts $KIND there."""

    steps: str  # the pipeline's steps (YAML, indented under `steps:`)
    kinds: tuple[str, ...] = tuple(READ_KINDS)  # what is planted there
    writes: bool = False  # swell writes the path (else it reads it)
    slow_for: tuple[str, ...] = ()  # kinds whose reading takes minutes: --timeout ends it


TARGETS: dict[str, Target] = {
    # declared output artifact: collected, hashed, recorded
    "output-artifact": Target(
        """
  - id: a
    script: |
PLANT      plant out.bin
    output_artifacts: [{name: o, path: out.bin, type: binary}]
""",
        kinds=tuple(KINDS),
        slow_for=("sparse",),
    ),
    # every file contract's source
    "contract-source": Target(
        """
  - id: a
    script: |
PLANT      plant src.json; plant spec.md
    handover:
      contracts:
        - {type: json_schema, source: src.json, schema: '{"type": "object"}', on_failure: continue}
        - {type: non_empty_file, source: src.json, on_failure: continue}
        - {type: format, source: src.json, on_failure: continue}
        - {type: markdown_spec, source: spec.md, on_failure: continue}
""",
        kinds=tuple(KINDS),
    ),
    # an artifact swapped after it was recorded, then injected into the next step
    "injected-source": Target(
        """
  - id: make
    script: echo plan > plan.md
    output_artifacts: [{name: plan, path: plan.md}]
  - id: swap
    dependencies: [make]
    script: |
PLANT      plant plan.md
  - id: use
    dependencies: [swap]
    memory: {inject_artifacts: [{step: make, artifact: plan}]}
    script: cat .wave/artifacts/plan
""",
        slow_for=("sparse",),
    ),
    # `{{ STEP.out.NAME }}` read by a composition field after the file was swapped
    "step-out": Target("""
  - id: make
    script: echo quick > mode.txt
    output_artifacts: [{name: mode, path: mode.txt}]
  - id: swap
    dependencies: [make]
    script: |
PLANT      plant mode.txt
  - id: route
    dependencies: [swap]
    branch:
      on: "{{ make.out.mode }}"
      cases: {quick: skip, default: skip}
"""),
    # `outcomes: extract_from`
    "outcome-source": Target("""
  - id: a
    script: |
PLANT      plant res.json
    outcomes: [{type: url, extract_from: res.json, json_path: .url}]
"""),
    # a persona's system_prompt_file in the project (read when the agent step runs)
    "project-prompt": Target("""
  - id: swap
    script: |
PLANT      plant "$PROJECT/.agents/personas/talker.md"
  - id: talk
    dependencies: [swap]
    persona: talker
    exec: {type: prompt, source: "say hi"}
"""),
    # swell writes a `source: stdout` artifact here
    "stdout-artifact": Target(
        """
  - id: a
    script: |
PLANT      plant .swell-artifacts/log
      echo logged
    output_artifacts: [{name: log, source: stdout}]
""",
        kinds=tuple(WRITTEN_KINDS),
        writes=True,
    ),
    # swell copies an injected artifact here
    "injection-target": Target(
        """
  - id: make
    script: echo plan > plan.md
    output_artifacts: [{name: plan, path: plan.md}]
  - id: swap
    dependencies: [make]
    script: |
PLANT      plant .wave/artifacts/plan
  - id: use
    dependencies: [swap]
    memory: {inject_artifacts: [{step: make, artifact: plan}]}
    script: cat .wave/artifacts/plan
""",
        kinds=tuple(WRITTEN_KINDS),
        writes=True,
    ),
    # the next step's log in the run directory, .swell/runs/RUN/use/1.log
    "step-log": Target(
        """
  - id: swap
    script: |
PLANT      plant "../../runs/$SWELL_RUN_ID/use/1.log"
  - id: use
    dependencies: [swap]
    script: echo to the log
""",
        kinds=tuple(WRITTEN_KINDS),
        writes=True,
    ),
    # the record of which store owns the workspace (.swell/workspaces/.owners/RUN),
    # read by `swell clean`
    "owner-record": Target(
        """
  - id: swap
    script: |
PLANT      plant "../.owners/$SWELL_RUN_ID"
""",
        kinds=tuple(WRITTEN_KINDS),
        writes=True,
    ),
}


def _cases() -> list[Any]:
    cases = []
    for name, target in TARGETS.items():
        for kind in target.kinds:
            marks = []
            if kind == "chardev" and os.geteuid() != 0:
                marks.append(pytest.mark.skip(reason="mknod needs root"))
            cases.append(pytest.param(name, kind, id=f"{name}-{kind}", marks=marks))
    return cases


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "scripts").mkdir(parents=True)
    (root / ".agents" / "personas").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "scripts" / "replies.yaml").write_text("replies:\n  - step: talk\n    text: hi\n")
    (root / ".agents" / "personas" / "talker.md").write_text("You talk.\n")
    return root


def pipeline_text(name: str) -> str:
    steps = TARGETS[name].steps.replace("PLANT", PLANT)
    return f"kind: WavePipeline\nmetadata: {{name: {name}}}\nsteps:{steps}"


def hostile_env(proj: Path, kind: str, canary: Path) -> dict[str, str]:
    return {**os.environ, "KIND": kind, "CANARY": str(canary), "PROJECT": str(proj)}


def make_canary(proj: Path) -> tuple[Path, tuple[bytes, int]]:
    canary = proj.parent / "canary.txt"
    canary.write_bytes(b"canary: nothing may write here\n")
    return canary, (canary.read_bytes(), canary.stat().st_mtime_ns)


def run_events(proj: Path, run_id: str) -> list[dict[str, Any]]:
    logs = swell("logs", run_id, "-o", "json", cwd=proj, timeout=GRACE)
    assert logs.returncode == 0 and "Traceback" not in logs.stderr, logs.stderr
    return [json.loads(line) for line in logs.stdout.splitlines()]


def check_whole(proj: Path, run_id: str) -> list[dict[str, Any]]:
    """The run's log is whole (events 1..n) and the run has ended; returns its events."""
    found = run_events(proj, run_id)
    assert [e["seq"] for e in found] == list(range(1, len(found) + 1))
    assert found[-1]["type"] == "run.finished", found[-1]
    # `--timeout` leaves a run interrupted (resumable); anything else ends it for good
    assert found[-1]["status"] in ("succeeded", "failed", "cancelled", "interrupted"), found[-1]
    return found


def check_canary(canary: Path, before: tuple[bytes, int]) -> None:
    assert (canary.read_bytes(), canary.stat().st_mtime_ns) == before, "the canary was touched"


@pytest.mark.parametrize(("target", "kind"), _cases())
def test_a_hostile_step_cannot_hang_fool_or_crash_swell(
    proj: Path, isolated_state: Path, target: str, kind: str
) -> None:
    write_pipeline(proj, target, pipeline_text(target))
    canary, before = make_canary(proj)
    slow = kind in TARGETS[target].slow_for
    timeout = 4 if slow else 60
    result = subprocess.run(
        swell_cmd("run", target, "--timeout", f"{timeout}s"),
        cwd=proj,
        capture_output=True,
        text=True,
        timeout=timeout + GRACE,  # a hang fails the test here
        stdin=subprocess.DEVNULL,
        env=hostile_env(proj, kind, canary),
    )
    said = result.stdout + result.stderr
    assert "Traceback" not in said and "internal error" not in said, said
    assert result.returncode in ((124,) if slow else (0, 1)), said
    run_id = result.stdout.split()[1]
    found = check_whole(proj, run_id)
    check_canary(canary, before)
    # what a step wrote is not multiplied into the store (a 50 MiB `{{ STEP.out }}` value
    # once made a 262 MB event and a 475 MB write-ahead log)
    stored = sum(p.stat().st_size for p in isolated_state.glob("state.db*"))
    assert stored < STORE_LIMIT, stored
    # a hostile file is never taken for a good one: nothing planted is recorded
    planted = [e for e in found if e["type"] == "artifact.written" and e["name"] == "o"]
    assert not planted, planted
    if found[-1]["status"] == "interrupted":  # ended by --timeout: end it for good
        cancelled = swell("cancel", run_id, cwd=proj, timeout=GRACE)
        assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    cleaned = swell("clean", cwd=proj, timeout=GRACE)
    assert cleaned.returncode == 0 and "Traceback" not in cleaned.stderr, cleaned.stderr
    assert not (isolated_state / "workspaces" / run_id).exists()
    check_canary(canary, before)


def test_a_huge_sparse_artifact_is_injected_as_a_sparse_copy(proj: Path) -> None:
    """Injecting an artifact copies it into the next step's workspace; a `truncate -s 256M`
    artifact used to become 256 MiB of zeros on disk (a 1 TB one, a full disk)."""
    write_pipeline(
        proj,
        "holes",
        """\
kind: WavePipeline
metadata: {name: holes}
steps:
  - id: make
    script: truncate -s 256M big.bin
    output_artifacts: [{name: big, path: big.bin, type: binary}]
  - id: use
    dependencies: [make]
    memory: {inject_artifacts: [{step: make, artifact: big}]}
    script: stat -c '%s %b %B' .wave/artifacts/big
""",
    )
    result = swell("run", "holes", "-v", cwd=proj, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    size, blocks, unit = next(
        line.split("|", 1)[1].split() for line in result.stdout.splitlines() if "use |" in line
    )
    assert int(size) == 256 << 20
    assert int(blocks) * int(unit) < 1 << 20, (blocks, unit)  # holes, not 256 MiB of zeros
