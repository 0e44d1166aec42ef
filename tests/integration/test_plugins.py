"""A step kind, a contract type, an adapter and a store backend from a plugin, found
through their entry points: one module each and one entry-point line, no change to
swell (tests/plugins/). The plugin imports only `swell.api`. The store backend also
runs the store conformance suite (tests/store/conftest.py: "plugin")."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from conftest import REPO, events, run_id_of, swell, write_pipeline

SITE = REPO / "tests" / "plugins" / "site"

PIPELINE = """
kind: WavePipeline
metadata: {name: plugged}
steps:
  - id: greet
    type: shout
    input: "hello {{ input }}"
    output_artifacts:
      - {name: greeting, path: greeting.txt, source: stdout}
    handover:
      contract:
        type: min_words
        source: greeting.txt
        min: MIN
"""


@pytest.fixture
def with_plugin() -> dict[str, str]:
    # in front of the PYTHONPATH the tests run with (the sources under test)
    path = os.pathsep.join(p for p in (str(SITE), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path}


def swell_imports(path: Path) -> set[str]:
    """The swell modules a plugin module imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return {name for name in names if name == "swell" or name.startswith("swell.")}


def test_the_plugins_import_only_the_public_api() -> None:
    modules = sorted(SITE.glob("*.py"))
    assert [m.stem for m in modules] == [
        "swell_min_words",
        "swell_parrot",
        "swell_scratch_store",
        "swell_shout",
    ]
    assert {m.name: swell_imports(m) for m in modules} == {m.name: {"swell.api"} for m in modules}


def test_a_plugin_step_kind_and_contract_type_run(
    project: Path, with_plugin: dict[str, str]
) -> None:
    write_pipeline(project, "plugged", PIPELINE.replace("MIN", "2"))
    assert swell("validate", "plugged", cwd=project, env=with_plugin).returncode == 0
    result = swell("run", "plugged", "--input", "world", cwd=project, env=with_plugin)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "▶ greet  shout 'hello {{ input }}'" in result.stdout
    assert "HELLO WORLD" in result.stdout  # a kind with `progress: answer` shows its answer
    assert "✓ contract 1 min_words" in result.stdout
    evs = events(project, run_id_of(result.stdout))
    assert [e["contract_type"] for e in evs if e["type"] == "contract.passed"] == ["min_words"]


def test_a_run_keeps_its_events_in_a_plugin_store(
    project: Path, with_plugin: dict[str, str]
) -> None:
    write_pipeline(project, "plugged", PIPELINE.replace("MIN", "2"))
    scratch = {**with_plugin, "SWELL_STORE": "scratch:demo"}
    result = swell("run", "plugged", "--input", "world", cwd=project, env=scratch)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "HELLO WORLD" in result.stdout
    assert not (project / ".swell" / "state.db").exists()  # nothing went to SQLite
    without = swell("list", cwd=project, env={**os.environ, "SWELL_STORE": "scratch:demo"})
    assert without.returncode != 0
    assert "cannot open a store at 'scratch:demo'" in without.stderr


def test_a_plugin_contract_failure_is_a_contract_failure(
    project: Path, with_plugin: dict[str, str]
) -> None:
    write_pipeline(project, "plugged", PIPELINE.replace("MIN", "3"))
    result = swell("run", "plugged", "--input", "world", cwd=project, env=with_plugin)
    assert result.returncode == 1
    assert "greeting.txt has 2 words, fewer than 3" in result.stdout


def test_plugin_rules_and_settings_are_checked_at_their_lines(
    project: Path, with_plugin: dict[str, str]
) -> None:
    no_input = PIPELINE.replace('    input: "hello {{ input }}"\n', "")
    write_pipeline(project, "plugged", no_input.replace("MIN", "0"))
    result = swell("validate", "plugged", cwd=project, env=with_plugin)
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        ".agents/pipelines/plugged.yaml:5:5: shout step 'greet' needs `input`",
        ".agents/pipelines/plugged.yaml:13:14: min must be at least 1",
    ]
    typo = PIPELINE.replace("MIN", "2").replace("source: greeting.txt", "sauce: greeting.txt")
    write_pipeline(project, "plugged", typo)
    result = swell("validate", "plugged", cwd=project, env=with_plugin)
    assert result.returncode == 1
    assert result.stderr.splitlines()[:2] == [
        ".agents/pipelines/plugged.yaml:12:9: missing required field 'source'",
        ".agents/pipelines/plugged.yaml:13:9: unknown field 'sauce' (did you mean 'source'?)",
    ]


def test_without_the_plugin_its_types_are_unknown(project: Path) -> None:
    write_pipeline(project, "plugged", PIPELINE.replace("MIN", "2"))
    result = swell("validate", "plugged", cwd=project)
    assert result.returncode == 1
    assert (
        "unknown step type 'shout' (known: aggregate, branch, command, concurrency, "
        "conditional, gate, iterate, loop, matrix, pipeline, prompt)" in result.stderr
    )
    assert "unknown contract type 'min_words'" in result.stderr


FIELDS = """
kind: WavePipeline
metadata: {name: loud}
steps:
  - id: greet
    type: shout
    input: "hi {{ input }}"
    TIMES
"""


def test_a_plugin_step_kind_reads_its_own_fields(
    project: Path, with_plugin: dict[str, str]
) -> None:
    write_pipeline(project, "loud", FIELDS.replace("TIMES", "times: 3"))
    assert swell("validate", "loud", cwd=project, env=with_plugin).returncode == 0
    result = swell("run", "loud", "--input", "you", cwd=project, env=with_plugin)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "HI YOU HI YOU HI YOU" in result.stdout


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("times: 0", "8:12: 'times': Input should be greater than or equal to 1"),
        ("tims: 2", "8:5: unknown field 'tims' (did you mean 'times'?)"),
        ("retyr: 2", "8:5: unknown field 'retyr' (did you mean 'retry'?)"),
    ],
    ids=["bad-value", "typo-of-its-field", "typo-of-a-step-field"],
)
def test_a_plugin_kinds_fields_are_checked_at_their_lines(
    project: Path, with_plugin: dict[str, str], field: str, message: str
) -> None:
    write_pipeline(project, "loud", FIELDS.replace("TIMES", field))
    for command in (("validate", "loud"), ("run", "loud", "--input", "x")):
        result = swell(*command, cwd=project, env=with_plugin)
        assert result.returncode == 1, result.stdout
        assert f".agents/pipelines/loud.yaml:{message}" in result.stderr.splitlines()


def test_a_built_in_kind_refuses_a_field_it_does_not_declare(project: Path) -> None:
    write_pipeline(project, "loud", FIELDS.replace("shout", "command").replace("TIMES", "times: 3"))
    result = swell("validate", "loud", cwd=project)
    assert result.returncode == 1
    message = "unknown field 'times' (did you mean 'outcomes'?)"  # as for any step
    assert result.stderr.splitlines()[0] == f".agents/pipelines/loud.yaml:8:5: {message}"


PARROT = """
kind: WavePipeline
metadata: {name: parroted}
steps:
  - id: ask
    persona: parrot
    exec: {type: prompt, source: "say {{ input }}"}
"""


def test_a_plugin_adapter_answers_a_persona(project: Path, with_plugin: dict[str, str]) -> None:
    manifest = project / "wave.yaml"
    text = manifest.read_text()
    text = text.replace("adapters:\n", "adapters:\n  parrot:\n    options: {prefix: polly}\n", 1)
    text = text.replace("personas:\n", "personas:\n  parrot:\n    adapter: parrot\n", 1)
    manifest.write_text(text)
    write_pipeline(project, "parroted", PARROT)
    result = swell("run", "parroted", "--input", "cracker", cwd=project, env=with_plugin)
    assert result.returncode == 0, result.stdout + result.stderr
    evs = events(project, run_id_of(result.stdout))
    finished = [e for e in evs if e["type"] == "step.finished"]
    assert finished and finished[0]["outcome"] == "success"
    assert any("polly: say cracker" in str(e) for e in evs)

    manifest.write_text(text.replace("prefix: polly", "prefx: polly"))
    result = swell("validate", cwd=project, env=with_plugin)
    assert result.returncode == 1
    # checked by the adapter's `Options`, as a built-in adapter's options are
    assert "wave.yaml:15:22: options.prefx: Extra inputs are not permitted" in result.stderr


def test_a_broken_plugin_entry_is_one_message_and_never_replaces_a_built_in(
    project: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    info = site / "swell_broken-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: swell-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[swell.step_kinds]\nbroken = swell_nowhere:KIND\ncommand = swell_nowhere:KIND\n"
    )
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, "PYTHONPATH": path}
    head = "kind: WavePipeline\nmetadata: {name: odd}\nsteps:\n"
    command = "  - {id: a, type: command, script: echo built-in}\n"
    write_pipeline(project, "odd", f"{head}{command}  - {{id: b, type: broken}}\n")
    result = swell("validate", "odd", cwd=project, env=env)
    assert result.returncode == 1
    assert result.stderr.splitlines()[0] == (
        "error: step type 'broken' cannot be loaded from swell_nowhere:KIND: "
        "No module named 'swell_nowhere'"
    )
    write_pipeline(project, "odd", head + command)
    result = swell("run", "odd", cwd=project, env=env)
    assert result.returncode == 0, result.stdout + result.stderr  # `command` is swell's own
    assert "built-in" in result.stdout
