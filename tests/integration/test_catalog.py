"""`swell list pipelines|personas|adapters`; plain `swell list` (and `list runs`) lists runs."""

from __future__ import annotations

import stat
from pathlib import Path

from conftest import run_id_of, swell, swell_json, write_pipeline


def test_plain_list_and_list_runs_list_runs(project: Path) -> None:
    assert swell("list", cwd=project).stdout.startswith("no runs yet")
    ids = [run_id_of(swell("run", "loop", cwd=project).stdout) for _ in range(3)]
    plain = swell_json("list", cwd=project)
    runs = swell_json("list", "runs", cwd=project)
    assert [r["id"] for r in plain] == [r["id"] for r in runs] == ids[::-1]
    assert [r["id"] for r in swell_json("list", "-n", "2", cwd=project)] == ids[:0:-1]
    text = swell("list", "runs", "-n", "1", cwd=project).stdout
    assert text.startswith(ids[-1]) and "succeeded" in text


def test_list_pipelines_with_their_validation_state(project: Path) -> None:
    write_pipeline(
        project,
        "broken",
        "kind: WavePipeline\nsteps:\n  - id: a\n    dependencies: [nope]\n    script: 'true'\n",
    )
    result = swell("list", "pipelines", cwd=project)
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "STEPS", "DESCRIPTION"]
    rows = {line.split()[0]: line for line in lines[1:]}
    assert set(rows) == {"agent-loop", "broken", "hello", "impl-issue", "loop", "release", "review"}
    assert rows["loop"].split()[1:3] == ["ok", "3"]
    assert rows["broken"].split()[1:3] == ["1", "error"]
    data = {p["name"]: p for p in swell_json("list", "pipelines", cwd=project)}
    assert data["broken"]["ok"] is False and data["broken"]["errors"] == 1
    assert "unknown" in data["broken"]["problems"][0] and "nope" in data["broken"]["problems"][0]
    assert data["hello"]["path"] == ".agents/pipelines/hello.yaml"


def test_list_personas_with_adapter_and_model(project: Path) -> None:
    text = (project / "wave.yaml").read_text()
    text = text.replace(
        "  architect:\n    adapter: replay\n", "  architect:\n    adapter: replay\n    model: big\n"
    )
    (project / "wave.yaml").write_text(text)
    rows = {p["name"]: p for p in swell_json("list", "personas", cwd=project)}
    assert rows["planner"]["adapter"] == "local"
    assert rows["planner"]["model"] == "(adapter default)"
    assert rows["architect"]["model"] == "big"
    assert rows["developer"]["allowed_tools"] == ["Read", "Write", "Edit", "Bash"]
    out = swell("list", "personas", cwd=project).stdout
    assert out.splitlines()[0].split() == ["NAME", "ADAPTER", "MODEL", "DESCRIPTION"]


def test_list_adapters_with_type_and_binary(project: Path, tmp_path: Path) -> None:
    fake = tmp_path / "my-claude"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    text = (
        (project / "wave.yaml")
        .read_text()
        .replace(
            "adapters:\n",
            f"adapters:\n  fast:\n    type: claude\n    binary: {fake}\n"
            "  ghost:\n    type: gemini\n    binary: /nowhere/gemini\n",
        )
    )
    (project / "wave.yaml").write_text(text)
    rows = {a["name"]: a for a in swell_json("list", "adapters", cwd=project)}
    assert rows["fast"] == {
        "name": "fast", "type": "claude", "binary": str(fake), "found": True, "source": "wave.yaml"
    }  # fmt: skip
    assert (
        rows["ghost"]["found"] is False and rows["ghost"]["binary"] == "not found: /nowhere/gemini"
    )
    assert rows["replay"]["type"] == "scripted" and rows["replay"]["found"] is True
    assert rows["local"]["binary"] == "(none: runs in process)"
    assert rows["codex"]["source"] == "built-in"
    out = swell("list", "adapters", cwd=project).stdout
    assert out.splitlines()[0].split() == ["NAME", "TYPE", "BINARY", "SOURCE"]


def test_list_of_an_unknown_kind_is_a_usage_error(project: Path) -> None:
    result = swell("list", "skills", cwd=project)
    assert result.returncode == 2
    assert "runs" in result.stderr and "pipelines" in result.stderr
