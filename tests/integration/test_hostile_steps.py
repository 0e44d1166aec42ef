"""A hostile step (an agent with a shell) or a broken disk cannot hang, fool or crash
swell (issue 28): what a step leaves in its workspace is read only as a regular file,
bounded, off the event loop; a templated sub-pipeline names a pipeline of the project;
what swell prints cannot drive the terminal; a value too large for the environment is
refused with one clear message. Every run here has a subprocess timeout: on the code
before the fix, the first tests hung until SIGKILL."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import events, run_id_of, swell, write_pipeline

MANIFEST = """\
apiVersion: v1
kind: WaveManifest
metadata: {name: hostile}
adapters:
  replay:
    type: scripted
    options: {script: scripts/replies.yaml}
personas:
  reviewer: {adapter: replay, system_prompt: "You review."}
"""

HANG_GUARD = 90  # seconds: a run that hangs fails the test instead of the suite


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "scripts").mkdir(parents=True)
    (root / "wave.yaml").write_text(MANIFEST)
    (root / "scripts" / "replies.yaml").write_text("replies: []\n")
    return root


def _run(root: Path, name: str, *args: str) -> tuple[int, str, list[dict[str, Any]]]:
    result = swell("run", name, *args, cwd=root, timeout=HANG_GUARD)
    said = result.stdout + result.stderr
    return result.returncode, said, events(root, run_id_of(result.stdout))


def _failed_contracts(found: list[dict[str, Any]]) -> dict[int, str]:
    return {e["index"]: e["error"] for e in found if e["type"] == "contract.failed"}


# ------------------------------------------------------------ files a step leaves


def test_a_fifo_as_a_contract_source_fails_each_file_contract_at_once(proj: Path) -> None:
    """Before the fix the first of these contracts blocked swell's event loop on the
    FIFO for good: `--timeout`, cancel, Ctrl-C and SIGTERM were not handled."""
    (proj / "scripts" / "replies.yaml").write_text(
        "replies:\n  - step: plant.review\n    text: "
        '\'{"verdict": "pass", "issues": [], "suggestions": [], "confidence": 1, "summary": "ok"}\'\n'
    )
    bin_dir = proj / "bin"
    bin_dir.mkdir()
    (bin_dir / "tsc").write_text("#!/bin/sh\nexit 0\n")  # it is never reached
    (bin_dir / "tsc").chmod(0o755)
    write_pipeline(
        proj,
        "fifo",
        """\
kind: WavePipeline
metadata: {name: fifo}
steps:
  - id: plant
    type: command
    script: mkfifo out.json && mkfifo spec.md && mkfifo types.ts
    handover:
      contracts:
        - {type: json_schema, source: out.json, schema: '{"type": "object"}', on_failure: continue}
        - {type: non_empty_file, source: out.json, on_failure: continue}
        - {type: format, source: out.json, on_failure: continue}
        - {type: markdown_spec, source: spec.md, on_failure: continue}
        - {type: typescript_interface, schema_path: types.ts, on_failure: continue}
        - {type: llm_judge, source: out.json, criteria: [good], on_failure: continue}
        - {type: agent_review, persona: reviewer, source: out.json, on_failure: continue}
""",
    )
    env_path = f"{bin_dir}:/usr/bin:/bin"
    result = swell(
        "run", "fifo", "--timeout", "60s", cwd=proj, timeout=HANG_GUARD, env=_env(PATH=env_path)
    )
    found = events(proj, run_id_of(result.stdout))
    failed = _failed_contracts(found)
    assert failed == {
        0: "out.json is not a regular file (a FIFO)",
        1: "out.json is not a regular file (a FIFO)",
        2: "format: out.json is not a regular file (a FIFO)",
        3: "markdown_spec: spec.md is not a regular file (a FIFO)",
        4: "typescript_interface: types.ts is not a regular file (a FIFO)",
        5: "llm_judge: out.json is not a regular file (a FIFO)",
    }, result.stdout + result.stderr
    # a review goes on without the file, and says why it was not shown
    warnings = [e["message"] for e in found if e["type"] == "warning"]
    assert "the file under review, out.json, is not a regular file (a FIFO)" in warnings


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, **extra}


def test_a_link_out_of_the_workspace_as_a_source_is_refused_not_read(proj: Path) -> None:
    write_pipeline(
        proj,
        "leak",
        """\
kind: WavePipeline
metadata: {name: leak}
steps:
  - id: plant
    type: command
    script: ln -s /etc/passwd out.json
    handover:
      contract: {type: json_schema, source: out.json, schema: '{"type": "object"}'}
""",
    )
    code, said, found = _run(proj, "leak")
    assert code == 1
    assert _failed_contracts(found) == {0: "source 'out.json' escapes the step's workspace"}
    assert "root:" not in said and "root:" not in json.dumps(found)


def test_a_fifo_or_a_socket_as_an_output_artifact_is_refused(proj: Path) -> None:
    """Before the fix both were skipped without a word (they are not `required`)."""
    write_pipeline(
        proj,
        "special",
        """\
kind: WavePipeline
metadata: {name: special}
steps:
  - id: plant
    type: command
    script: |
      mkfifo pipe.out
      python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock.out')"
    output_artifacts:
      - {name: pipe, path: pipe.out}
      - {name: sock, path: sock.out}
""",
    )
    code, said, found = _run(proj, "special")
    assert code == 1, said
    finished = next(e for e in found if e["type"] == "step.finished")
    assert finished["error"] == (
        "artifact 'pipe' (pipe.out) is not a regular file (a FIFO); not recorded; "
        "artifact 'sock' (sock.out) is not a regular file (a socket); not recorded"
    )
    assert not [e for e in found if e["type"] == "artifact.written" and e["name"] != "output"]


def test_timeout_wins_over_hashing_a_huge_sparse_artifact(proj: Path) -> None:
    """A terabyte of holes costs a step one `truncate`; hashing it takes many minutes.
    Before the fix the hash ran on the event loop and `--timeout` waited for it."""
    write_pipeline(
        proj,
        "sparse",
        """\
kind: WavePipeline
metadata: {name: sparse}
steps:
  - id: plant
    type: command
    script: truncate -s 1T big.bin
    output_artifacts: [{name: big, path: big.bin, type: binary}]
""",
    )
    result = swell("run", "sparse", "--timeout", "3s", cwd=proj, timeout=HANG_GUARD)
    assert result.returncode == 124, result.stdout + result.stderr


# ------------------------------------------------------------ sub-pipeline names


def _evil(root: Path) -> Path:
    """A pipeline file outside the project's pipeline directories: its step leaves PWNED."""
    evil = root.parent / "elsewhere" / "e.yaml"
    evil.parent.mkdir()
    evil.write_text(
        "kind: WavePipeline\nmetadata: {name: e}\nsteps:\n"
        f"  - {{id: pwn, type: command, script: 'touch {root.parent / 'PWNED'}'}}\n"
    )
    return evil


def test_a_rendered_pipeline_may_only_name_a_pipeline_of_the_project(proj: Path) -> None:
    """An item an earlier step wrote is a path to any pipeline file: before the fix it
    ran (an agent that may only write files got a command of its choosing run)."""
    evil = _evil(proj)
    write_pipeline(
        proj, "child", "kind: WavePipeline\nmetadata: {name: child}\nsteps:\n"
        "  - {id: hi, type: command, script: 'echo hi'}\n",
    )  # fmt: skip
    write_pipeline(
        proj,
        "each",
        f"""\
kind: WavePipeline
metadata: {{name: each}}
steps:
  - id: scan
    type: command
    script: echo '["child", "{evil}", "../../elsewhere/e"]' > items.json
    output_artifacts: [{{name: items, path: items.json, type: json}}]
  - id: fan
    dependencies: [scan]
    pipeline: "{{{{ item }}}}"
    iterate: {{over: "{{{{ scan.out.items }}}}", on_failure: continue}}
""",
    )
    code, said, found = _run(proj, "each")
    assert code == 0 and not (proj.parent / "PWNED").exists()  # on_failure: continue
    warning = next(e["message"] for e in found if "items failed" in e.get("message", ""))
    for index, value in ((1, str(evil)), (2, "../../elsewhere/e")):
        assert (
            f"item {index}: `pipeline: {{{{ item }}}}` rendered to {value!r}, which is not the "
            "name of a pipeline of the project" in warning
        ), warning
    started = [e["pipeline"] for e in found if e["type"] == "child.started"]
    assert started == ["child"], said


def test_a_pipeline_step_refuses_a_rendered_path_too(proj: Path) -> None:
    """A step's output as a child's input, which the child runs as `pipeline:`."""
    evil = _evil(proj)
    write_pipeline(
        proj, "runner", "kind: WavePipeline\nmetadata: {name: runner}\nsteps:\n"
        "  - {id: go, pipeline: '{{ input }}'}\n",
    )  # fmt: skip
    write_pipeline(
        proj,
        "pick",
        f"""\
kind: WavePipeline
metadata: {{name: pick}}
steps:
  - id: scan
    type: command
    script: printf '{evil}' > target.txt
    output_artifacts: [{{name: target, path: target.txt}}]
  - id: sub
    dependencies: [scan]
    pipeline: runner
    input: "{{{{ scan.out.target }}}}"
""",
    )
    code, said, _ = _run(proj, "pick")
    assert code == 1 and not (proj.parent / "PWNED").exists()
    assert (
        f"`pipeline: {{{{ input }}}}` rendered to {str(evil)!r}, which is not the name of a "
        "pipeline of the project" in said
    ), said


def test_a_literal_pipeline_path_still_runs(proj: Path) -> None:
    """A path written in the manifest itself is the author's choice, not a step's."""
    evil = _evil(proj)
    write_pipeline(
        proj, "lit", "kind: WavePipeline\nmetadata: {name: lit}\nsteps:\n"
        f"  - {{id: sub, pipeline: '{evil}'}}\n",
    )  # fmt: skip
    code, said, _ = _run(proj, "lit")
    assert code == 0, said
    assert (proj.parent / "PWNED").exists()


# ------------------------------------------------------------ what reaches the terminal

BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]

# a window title, a screen clear, a hyperlink, a cursor move, an 8-bit CSI (U+009B),
# and bidi overrides and isolates that make text read backwards ("Trojan Source")
HOSTILE = (
    "\x1b]0;pwned\x07\x1b[2J\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\\x1b[5A\x9b2J"
    "\u202edeliaf\u202c \u2066isolated\u2069 \u202aa\u202bb\u202dc\u2067d\u2068e"
)
SEQUENCES = ("\x1b]0;pwned", "\x1b[2J", "\x1b]8;;", "\x1b[5A", "\x9b", *map(chr, BIDI))


def _printf(text: str) -> str:
    """`text` as a printf format of octal escapes: the script holds no control bytes."""
    raw = text.encode()
    return "".join(chr(b) if chr(b).isalnum() or chr(b) in " .:/;[]" else f"\\{b:03o}" for b in raw)


def _escape_pipeline(root: Path) -> None:
    (root / "scripts" / "replies.yaml").write_text(
        "replies:\n  - step: talk\n    text: " + json.dumps(f"said {HOSTILE} done") + "\n"
    )
    (root / "wave.yaml").write_text(
        MANIFEST + "  talker: {adapter: replay, system_prompt: 'You talk.'}\n"
    )
    write_pipeline(
        root,
        "shout",
        f"""\
kind: WavePipeline
metadata: {{name: shout}}
steps:
  - id: talk
    persona: talker
    exec: {{type: prompt, source: "say it"}}
  - id: out
    dependencies: [talk]
    type: command
    script: |
      printf '{_printf(HOSTILE)}\\n'
      printf 'err {_printf(HOSTILE)}\\n' >&2
      exit 3
""",
    )


def _no_sequences(text: str) -> None:
    for seq in SEQUENCES:
        assert seq not in text, (seq, text)


def test_escape_sequences_in_output_never_reach_the_terminal(proj: Path) -> None:
    """Agent text and a command's stdout and stderr print their control characters as
    `\\x1b` and the like, in `swell run`, `swell run -v` and `swell logs`; the store keeps
    them as they were."""
    _escape_pipeline(proj)
    run = swell("run", "shout", cwd=proj, timeout=HANG_GUARD)
    assert run.returncode == 1, run.stdout + run.stderr
    _no_sequences(run.stdout + run.stderr)
    assert "\\x1b]0;pwned\\x07" in run.stdout  # shown, escaped
    assert "\\u202edeliaf\\u202c" in run.stdout
    run_id = run_id_of(run.stdout)
    verbose = swell("run", "shout", "-v", cwd=proj, timeout=HANG_GUARD)
    _no_sequences(verbose.stdout + verbose.stderr)
    for args in (("--step", "out"), ("--step", "talk"), ()):
        logs = swell("logs", run_id, *args, cwd=proj, timeout=HANG_GUARD)
        assert logs.returncode == 0, logs.stderr
        _no_sequences(logs.stdout + logs.stderr)
    out = swell("logs", run_id, "--step", "out", cwd=proj, timeout=HANG_GUARD).stdout
    assert "\\x1b[2J" in out
    as_json = swell("logs", run_id, "-o", "json", cwd=proj, timeout=HANG_GUARD).stdout
    _no_sequences(as_json)
    stored = [json.loads(line) for line in as_json.splitlines()]
    finished = next(e for e in stored if e["type"] == "step.finished" and e["step_id"] == "talk")
    assert finished["output_tail"] == f"said {HOSTILE} done"  # kept as it was


def test_escape_sequences_never_reach_a_terminal_through_the_live_display(proj: Path) -> None:
    """On a terminal `swell run` draws a live region (rich): the output it shows there,
    and the progress lines above it, are escaped too."""
    _escape_pipeline(proj)
    main, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "swell", "run", "shout"],
        cwd=proj,
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        close_fds=True,
    )
    os.close(secondary)
    seen = b""
    deadline = time.monotonic() + HANG_GUARD
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1)
        if ready:
            try:
                data = os.read(main, 65536)
            except OSError:  # the other side closed
                break
            if not data:
                break
            seen += data
        elif proc.poll() is not None:
            break
    proc.wait(timeout=10)
    os.close(main)
    text = seen.decode("utf-8", "replace")
    assert "pwned" in text, text
    _no_sequences(text)


# ------------------------------------------------------------ values too large to pass


def _big_input(root: Path, script: str, size: int, byte: str = "a") -> None:
    """A 'count' child whose command `script` uses `{{ input }}`, and a parent handing it
    the content of an artifact of `size` bytes `byte` as its input."""
    write_pipeline(
        root,
        "count",
        "kind: WavePipeline\nmetadata: {name: count}\nsteps:\n"
        f"  - id: count\n    type: command\n    script: {json.dumps(script)}\n",
    )
    write_pipeline(
        root,
        "big",
        f"""\
kind: WavePipeline
metadata: {{name: big}}
steps:
  - id: scan
    type: command
    script: head -c {size} /dev/zero | tr '\\0' '{byte}' > big.txt
    output_artifacts: [{{name: big, path: big.txt}}]
  - id: sub
    dependencies: [scan]
    pipeline: count
    input: "{{{{ scan.out.big }}}}"
""",
    )


def test_a_value_too_large_for_the_environment_is_refused_by_name(proj: Path) -> None:
    """Before the fix: "internal error: OSError(7, 'Argument list too long')"."""
    _big_input(proj, "printf '%s' {{ input }} | wc -c", 200 * 1024)
    code, said, _ = _run(proj, "big")
    assert code == 1
    assert "internal error" not in said
    assert (
        "script not run: {{ input }} (line 1 of the script) is 204,800 bytes; a value "
        "reaches a script through one environment variable, which Linux limits to 128 KiB. "
        "Fix: have the script read the file the value comes from, by its path" in said
    ), said


def test_a_value_with_a_nul_byte_is_refused_by_name(proj: Path) -> None:
    """Before the fix: "internal error: ValueError('embedded null byte')"."""
    _big_input(proj, "printf '%s' {{ input }} | wc -c", 10, byte="\\0")
    code, said, _ = _run(proj, "big")
    assert code == 1
    assert "internal error" not in said
    assert (
        "script not run: {{ input }} (line 1 of the script) holds a NUL byte, which no "
        "environment variable can carry" in said
    ), said


def test_values_too_large_together_are_refused_with_the_largest_named(proj: Path) -> None:
    """Each value fits one variable, but not all of them a process's start (ARG_MAX)."""
    _big_input(proj, "printf '%s' " + " ".join(["{{ input }}"] * 60) + " | wc -c", 110 * 1024)
    code, said, _ = _run(proj, "big")
    assert code == 1
    assert "internal error" not in said
    assert (
        "script not run: its values and environment together are more than the system lets "
        "a process start with (Argument list too long; the largest values: {{ input }} "
        "112,640 bytes" in said
    ), said


def test_a_fifo_as_a_system_prompt_file_is_named_as_one(proj: Path) -> None:
    """`swell validate` used to call it missing (`is_file` is False for a FIFO)."""
    (proj / "wave.yaml").write_text(
        MANIFEST + "  writer: {adapter: replay, system_prompt_file: prompts/writer.md}\n"
    )
    (proj / "prompts").mkdir()
    os.mkfifo(proj / "prompts" / "writer.md")
    result = swell("validate", cwd=proj, timeout=HANG_GUARD)
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "system prompt file prompts/writer.md is not a regular file (a FIFO)" in said, said
    assert "does not exist" not in said
