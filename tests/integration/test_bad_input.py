"""Bad and hostile input on the command line: one clear message, a non-zero exit, never a
traceback (docs/security.md, "Hostile input"). Names that would become paths outside
`.swell` are refused when the pipeline loads, before anything of the run is written."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import swell, swell_cmd, write_pipeline

ADDRESS_SPACE = 1024 * 1024 * 1024  # what a hostile file may make `swell` reserve


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def swell_bounded(
    *args: str | bytes, cwd: Path, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    """`swell` in at most 1 GiB of address space; arguments may be raw bytes."""
    return subprocess.run(
        [*swell_cmd(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_memory,
    )


def refused(result: subprocess.CompletedProcess[str], first_line: str, code: int = 1) -> None:
    """Exit `code`, no traceback, and stderr starting with `first_line`."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[0].startswith(first_line), result.stderr


# ---------------------------------------------------------------------- odd option values


@pytest.mark.parametrize("value", ["99999999999999999999", "-5", "0"])
def test_list_limit_out_of_range_is_a_usage_error(project: Path, value: str) -> None:
    result = swell("list", "-n", value, cwd=project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"Invalid value for '--limit' / '-n': {value} is not in the range" in result.stderr


def test_thread_budget_zero_is_a_usage_error(project: Path) -> None:
    result = swell("thread", "some-run", "--budget", "0", cwd=project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "Invalid value for '--budget': 0 is not in the range 1<=x<=100000000" in result.stderr


HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["logs", "--tail", HUGE],
            f"Invalid value for '--tail' / '-n': {HUGE} is not in the range",
        ),
        (["logs", "--since", "99999999999999d"], "duration '99999999999999d' is too long"),
        (["logs", "--since", HUGE], f"duration '{HUGE}' is too long (at most 100 years)"),
        (["logs", "--step", "implement", "--since", "99999999999999d"], "is too long"),
        (["run", "loop", "--timeout", "99999999999999d"], "duration '99999999999999d' is too long"),
        (["run", "loop", "--timeout", "9" * 400 + "s"], "is too long (at most 100 years)"),
        (["clean", "--older-than", "99999999999999d"], "duration '99999999999999d' is too long"),
        (["cancel", "--force", "--grace", "1e400"], "Invalid value for '--grace': inf is not in"),
        (["thread", "r", "--budget", HUGE], f"Invalid value for '--budget': {HUGE} is not in"),
        (["thread", "r", "--before", HUGE], f"Invalid value for '--before': {HUGE} is not in"),
        (["worker", "--slots", HUGE], f"Invalid value for '--slots': {HUGE} is not in"),
    ],
)
def test_absurd_numbers_and_durations_are_usage_errors(
    project: Path, args: list[str], message: str
) -> None:
    result = swell(*args, cwd=project)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert message in " ".join(result.stderr.split()), result.stderr


@pytest.mark.parametrize("since", ["99999999999999d", "9999999999w"])
def test_retro_stats_since_before_the_year_one_is_one_error(project: Path, since: str) -> None:
    result = swell("retro", "stats", "--since", since, cwd=project)
    refused(result, f"error: --since '{since}' reaches back before the year 1")


@pytest.mark.parametrize("command", ["status", "logs", "resume", "thread", "cancel", "approve"])
def test_an_empty_run_id_is_refused_not_matched_as_a_prefix(project: Path, command: str) -> None:
    result = swell(command, " ", cwd=project)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "a run id cannot be empty" in result.stderr


def test_an_argument_that_is_not_utf8_is_refused(project: Path) -> None:
    for args in ([b"status", b"\xff\xfe"], [b"run", b"loop", b"--input", b"\xff"]):
        refused(
            swell_bounded(*args, cwd=project),
            f"error: argument {len(args)} is not valid UTF-8",
            2,
        )


# ------------------------------------------------------------------------------- init


def test_init_where_nothing_can_be_created(tmp_path: Path) -> None:
    refused(swell("init", "/proc/foo", cwd=tmp_path), "error: cannot write /proc/foo: No such file")
    (tmp_path / "afile").write_text("")
    refused(
        swell("init", "afile", cwd=tmp_path),
        "error: cannot create a project in afile: it is not a directory",
    )
    refused(swell("init", "afile/sub", cwd=tmp_path), "error: cannot write ")
    refused(swell("init", "x" * 300, cwd=tmp_path), "error: cannot write ")


# ------------------------------------------------------------------- projects and paths


def test_project_option_pointing_at_a_file_or_nothing(project: Path, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    for command in (["list"], ["validate"], ["thread", "r"]):
        refused(
            swell("-C", str(tmp_path / "afile"), *command, cwd=project),
            f"error: project directory {tmp_path / 'afile'} is not a directory",
        )
        refused(
            swell("-C", str(tmp_path / "missing"), *command, cwd=project),
            f"error: project directory {tmp_path / 'missing'} does not exist",
        )


def test_a_pipeline_path_that_is_a_directory(project: Path) -> None:
    refused(
        swell("run", ".agents/pipelines/", cwd=project),
        "error: pipeline file .agents/pipelines/ is a directory",
    )
    result = swell("validate", ".agents/pipelines", cwd=project)
    refused(result, ".agents/pipelines: pipeline file .agents/pipelines is a directory")


def test_a_pipeline_path_that_is_a_device_or_too_long(project: Path) -> None:
    refused(
        swell("run", "/dev/zero", cwd=project),
        "error: pipeline file /dev/zero is not a regular file",
    )
    refused(swell("validate", "x" * 300 + ".yaml", cwd=project), "x" * 300)


def test_validate_of_a_binary_file(project: Path) -> None:
    (project / "blob.yaml").write_bytes(b"kind: WavePipeline\n" + bytes(range(128)))
    refused(
        swell("validate", "blob.yaml", cwd=project),
        "blob.yaml:2:1: a NUL byte (U+0000) is not allowed in YAML",
    )
    (project / "latin.yaml").write_bytes(b"kind: WavePipeline\nsteps: [caf\xe9]\n")
    refused(
        swell("validate", "latin.yaml", cwd=project),
        "latin.yaml:2:12: file is not valid UTF-8 (byte 0xe9)",
    )
    (project / "ls.yaml").write_bytes(Path(sys.executable).resolve().read_bytes()[:200_000])
    result = swell("validate", "ls.yaml", cwd=project)
    refused(result, "ls.yaml:")
    assert len(result.stderr.splitlines()) == 2  # one problem, then the count


# ------------------------------------------------------------------------- hostile YAML

BOMB = "\n".join(
    ["kind: WavePipeline", 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    + [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    + ["steps: [*a8]", ""]
)


def test_an_alias_bomb_is_refused_in_bounded_memory(project: Path) -> None:
    write_pipeline(project, "bomb", BOMB)
    for args in (["validate", "bomb"], ["run", "bomb"]):
        refused(
            swell_bounded(*args, cwd=project, timeout=20),
            ".agents/pipelines/bomb.yaml:7:10: alias *a4 expands the file past 100,000 values",
        )


def test_deep_nesting_in_wave_yaml_is_refused_not_a_crash(project: Path) -> None:
    # 50,000 levels crashed libyaml's composer (a segfault); 600 raised RecursionError
    manifest = (project / "wave.yaml").read_text()
    for depth in (600, 50_000):
        (project / "wave.yaml").write_text(
            manifest + "ontology: " + "[" * depth + "]" * depth + "\n"
        )
        refused(swell_bounded("run", "hello", cwd=project), "wave.yaml:")
        # reading the store needs no manifest: `swell list` works on
        assert swell_bounded("list", cwd=project).returncode == 0
        result = swell_bounded("validate", cwd=project)
        refused(result, "wave.yaml:")
        assert "nesting is deeper than 64 levels" in result.stderr


def test_a_recursive_alias_is_refused(project: Path) -> None:
    write_pipeline(project, "self", "kind: WavePipeline\nsteps: &s [*s]\n")
    refused(
        swell_bounded("run", "self", cwd=project),
        ".agents/pipelines/self.yaml:2:12: alias *s is inside the value it names",
    )


def test_a_huge_pipeline_file_is_not_read(project: Path) -> None:
    path = write_pipeline(project, "huge", "kind: WavePipeline\n")
    with path.open("ab") as fh:
        fh.write(b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    refused(swell_bounded("validate", "huge", cwd=project), ".agents/pipelines/huge.yaml:2:")


# -------------------------------------------------------------- names that become paths


def nothing_written(project: Path, state: Path) -> None:
    """No run was recorded and nothing named ESCAPED exists anywhere near."""
    listed = swell("list", "-o", "json", cwd=project)
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stdout
    for sub in ("runs", "workspaces"):
        assert not (state / sub).exists() or not any((state / sub).iterdir())
    assert not [p for p in project.parent.rglob("*") if "ESCAPED" in p.name]


STEP = "  - id: a\n    type: command\n    script: echo hi > out.txt\n"


@pytest.mark.parametrize(
    ("text", "first_line"),
    [
        # metadata.name becomes the run id: .swell/runs/<id>, .swell/workspaces/<id>
        (
            f"kind: WavePipeline\nmetadata: {{name: ../../ESCAPED}}\nsteps:\n{STEP}",
            ":2:18: 'name': must not contain '/'",
        ),
        (
            f"kind: WavePipeline\nmetadata: {{name: TMP/ESCAPED}}\nsteps:\n{STEP}",
            ":2:18: 'name': must not contain '/'",
        ),
        (
            "kind: WavePipeline\nmetadata: {name: '..'}\nsteps:\n" + STEP,
            ":2:18: 'name': must not be '..'",
        ),
        # a step id is a directory of the run: .swell/runs/<id>/<step>/
        (
            "kind: WavePipeline\nsteps:\n  - id: ../../ESCAPED\n    script: echo\n",
            ":3:9: 'id': step id must start",
        ),
        # an output artifact without a path: <workspace>/.swell-artifacts/<name>
        (
            f"kind: WavePipeline\nsteps:\n{STEP}"
            "    output_artifacts: [{name: ../../../ESCAPED, source: stdout}]\n",
            ":6:31: 'name': must not contain '/'",
        ),
        # an injected artifact: <workspace>/.wave/artifacts/<as>
        (
            f"kind: WavePipeline\nsteps:\n{STEP}"
            "    output_artifacts: [{name: out, path: out.txt}]\n"
            "  - id: b\n    script: echo\n    dependencies: [a]\n"
            "    memory: {inject_artifacts: [{step: a, artifact: out, as: ../../../ESCAPED}]}\n",
            ":10:62: 'as': must not contain '/'",
        ),
        # a worktree branch: <run>/worktrees/<branch>
        (
            f"kind: WavePipeline\nsteps:\n{STEP}"
            "    workspace: {type: worktree, branch: ../../ESCAPED}\n",
            ":6:41: 'branch': must not contain '..'",
        ),
    ],
    ids=[
        "name-dotdot",
        "name-absolute",
        "name-is-dotdot",
        "step-id",
        "artifact",
        "inject-as",
        "branch",
    ],
)
def test_an_escaping_name_is_refused_before_anything_is_written(
    project: Path, isolated_state: Path, text: str, first_line: str
) -> None:
    # TMP: an absolute path in this test's own directory
    write_pipeline(project, "escape", text.replace("TMP", str(project.parent)))
    for command in (["run", "escape"], ["validate", "escape"]):
        refused(swell(*command, cwd=project), f".agents/pipelines/escape.yaml{first_line}")
    nothing_written(project, isolated_state)


def test_a_sub_pipeline_with_an_escaping_name_is_refused_before_its_run(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(
        project, "child", f"kind: WavePipeline\nmetadata: {{name: ../../ESCAPED}}\nsteps:\n{STEP}"
    )
    write_pipeline(
        project, "parent", "kind: WavePipeline\nsteps:\n  - id: sub\n    pipeline: child\n"
    )
    result = swell("run", "parent", cwd=project)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert ".agents/pipelines/child.yaml:2:18: 'name': must not contain '/'" in result.stdout
    runs = json.loads(swell("list", "-o", "json", cwd=project).stdout)
    assert [r["pipeline"] for r in runs] == ["parent"]  # no child run was recorded
    assert not [p for p in project.parent.rglob("*") if "ESCAPED" in p.name]


ODD = ["", " ", "-", "%", "_", "*", "../../etc/passwd", ".", "..", "ü", "a\tb", "a\nb", "-1", "0"]
ODD += ["99999999999999999999", "x" * 3000, "x" * 300 + ".yaml", "/dev/zero", "/"]
COMMANDS = ["status", "logs", "artifacts", "approve", "reject", "cancel", "resume", "thread"]
COMMANDS += ["validate", "run"]


@pytest.mark.filterwarnings("ignore:'click.utils:DeprecationWarning")  # importing typer
def test_no_command_raises_for_odd_arguments(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command with odd values, in process (any exception but SystemExit fails)."""
    from swell.cli.app import main

    monkeypatch.chdir(project)
    assert swell("run", "loop", cwd=project).returncode == 0  # a run to look things up in
    for command in COMMANDS:
        for value in ODD:
            monkeypatch.setattr(sys, "argv", ["swell", command, value])
            with pytest.raises(SystemExit) as exit_:
                main()
            err = capsys.readouterr().err
            assert exit_.value.code in (0, 1, 2), (command, value, exit_.value.code, err)
            if exit_.value.code:
                assert err.strip(), (command, value)
