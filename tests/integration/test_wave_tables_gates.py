"""Wave's gate tests (internal/pipeline/gate_test.go), mirrored through `swell run` on
pipelines of our own: how an approval or timer gate ends and where its choice routes.
Case ids name the Wave test; docs/conformance.md, "Wave's test tables"."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import events, run_id_of, swell, write_pipeline

G = "pipeline/gate_test.go:"
MANIFEST = "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: gates}\n"
AFTER = """\
  - id: implement
    type: command
    script: echo implemented
  - id: plan
    type: command
    script: echo planned
"""


def _run(tmp_path: Path, gate: str, *args: str, after: str = "") -> tuple[int, list[str], str]:
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    text = f"kind: WavePipeline\nmetadata: {{name: g}}\nsteps:\n  - id: gate\n    gate: {gate}\n"
    write_pipeline(tmp_path, "g", text + after)
    result = swell("run", "g", *args, cwd=tmp_path)
    printed = result.stdout + result.stderr
    if not result.stdout.startswith("run "):
        return result.returncode, [], printed
    started = [e["step_id"] for e in events(tmp_path, run_id_of(result.stdout))
               if e["type"] == "step.started"]  # fmt: skip
    return result.returncode, started, printed


CHOICES = (
    "[{label: Approve, key: a, target: implement}, {label: Revise, key: r, target: plan},"
    " {label: Abort, key: q, target: _fail}]"
)
CASES = [
    ("TestGateExecutor_Approval_Auto", "{type: approval, auto: true}", [], 0, ["gate"]),
    ("TestGateExecutor_Approval_LegacyAutoApprove_StillWorks", "{auto: true}", [], 0, ["gate"]),
    ("TestGateExecutor_Timer", "{type: timer, timeout: 1s}", [], 0, ["gate"]),
    ("TestGateExecutor_Approval_Timeout", "{type: approval, timeout: 1s}", ["--wait"], 1, ["gate"]),
    (
        "TestGateExecutor_Approval_WithChoices_AutoApproveHandler",
        f"{{type: approval, choices: {CHOICES}, default: a}}",
        ["--auto-approve"],
        0,
        ["gate", "implement"],
    ),
    (
        "TestGateExecutor_Approval_WithChoices_NoHandler_TimeoutDefault",
        f"{{type: approval, timeout: 1s, choices: {CHOICES}, default: a}}",
        ["--wait"],
        0,
        ["gate", "implement"],
    ),
]


@pytest.mark.parametrize(
    ("gate", "args", "code", "started"), [c[1:] for c in CASES], ids=[G + c[0] for c in CASES]
)
def test_gate(tmp_path: Path, gate: str, args: list[str], code: int, started: list[str]) -> None:
    # the gate's choices lead to these steps (no choice, no steps after the gate)
    got_code, got_started, printed = _run(
        tmp_path, gate, *args, after=AFTER if "choices" in gate else ""
    )
    assert got_code == code, printed
    assert got_started == started, printed


@pytest.mark.parametrize(
    ("gate", "says"),
    [("{type: timer}", "timeout"), ("{type: someday}", "someday")],
    ids=[G + "TestGateExecutor_Timer_MissingTimeout", G + "TestGateExecutor_UnknownType"],
)
def test_refused(tmp_path: Path, gate: str, says: str) -> None:
    """Wave fails these when the gate runs; swell at `swell validate`."""
    (tmp_path / "wave.yaml").write_text(MANIFEST)
    write_pipeline(
        tmp_path,
        "g",
        f"kind: WavePipeline\nmetadata: {{name: g}}\nsteps:\n  - id: gate\n    gate: {gate}\n",
    )
    result = swell("validate", "g", cwd=tmp_path)
    assert result.returncode == 1 and says in result.stdout + result.stderr
