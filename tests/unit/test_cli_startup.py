"""How the CLI starts: only the command asked for is imported and built, and the
program's exit keeps every exit code and message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# importing typer (click 8.5 deprecations): as tests/integration/test_bad_input.py
pytestmark = pytest.mark.filterwarnings("ignore:'click.utils:DeprecationWarning")


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["run", "loop"], "run"),
        (["-C", "run", "status"], "status"),  # `run` is the value of -C here
        (["--project", "x", "list"], "list"),
        (["--project=x", "logs"], "logs"),
        (["--version"], ""),
        (["--version", "run"], ""),
        (["--help"], None),
        ([], None),
        (["frobnicate"], None),
    ],
)
def test_the_command_an_argument_list_runs(argv: list[str], named: str | None) -> None:
    from swell.cli.app import _command_named

    assert _command_named(argv) == named


def test_registering_a_command_imports_only_its_module() -> None:
    code = (
        "import sys; from swell.cli import app; app._register(['run', 'x']); "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('swell.cli.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert "swell.cli.runs" in out
    assert not {"swell.cli.gates", "swell.cli.inspect", "swell.cli.thread"} & set(out)


def _swell(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "swell", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )


def test_the_program_keeps_exit_codes_and_messages(tmp_path: Path) -> None:
    version = _swell("--version", cwd=tmp_path)
    assert (version.returncode, version.stdout.strip()) == (0, "swell 0.1.0")
    usage = _swell("frobnicate", cwd=tmp_path)
    assert usage.returncode == 2 and "No such command 'frobnicate'" in usage.stderr
    no_project = _swell("status", "x", cwd=tmp_path)
    assert no_project.returncode != 0 and no_project.stderr.startswith("error: ")
    listing = _swell("--help", cwd=tmp_path)
    assert listing.returncode == 0
    assert "run" in listing.stdout and "thread" in listing.stdout


def test_a_run_of_files_that_loaded_before_does_not_import_the_yaml_parser(
    tmp_path: Path,
) -> None:
    (tmp_path / "wave.yaml").write_text("apiVersion: v1\nkind: WaveManifest\nmetadata: {name: p}\n")
    pipelines = tmp_path / ".agents" / "pipelines"
    pipelines.mkdir(parents=True)
    (pipelines / "one.yaml").write_text(
        "kind: WavePipeline\nmetadata: {name: one}\nsteps:\n"
        "  - {id: hello, type: command, script: echo hello}\n"
    )
    code = (
        "import sys; sys.argv = ['swell', 'run', 'one']\n"
        "from swell.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('yaml' in sys.modules, file=sys.stderr)"
    )

    def run() -> str:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert "run succeeded" in done.stdout, done.stderr
        return done.stderr.strip().splitlines()[-1]

    assert run() == "True"  # parsed, and kept in the manifest cache
    assert run() == "False"  # read back from it
