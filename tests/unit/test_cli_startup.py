"""How the CLI starts: only the command asked for is imported and built, and the
program's exit keeps every exit code and message."""

from __future__ import annotations

import json
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


def _imported(*args: str, cwd: Path) -> set[str]:
    """The modules `swell ARGS` has imported when it is done (as `entry` runs it: the
    command's modules imported first, `_warm`; `-X importtime` would not list those)."""
    code = (
        f"import sys; sys.argv = ['swell', *{list(args)!r}]\n"
        "from swell.cli import app\n"
        "app._warm(sys.argv[1:])\n"
        "try:\n    app.main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print(*sorted(sys.modules), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stderr.strip().splitlines()[-1].split())


def _one_step_project(root: Path) -> Path:
    (root / "wave.yaml").write_text("apiVersion: v1\nkind: WaveManifest\nmetadata: {name: p}\n")
    pipelines = root / ".agents" / "pipelines"
    pipelines.mkdir(parents=True)
    (pipelines / "one.yaml").write_text(
        "kind: WavePipeline\nmetadata: {name: one}\nsteps:\n"
        "  - {id: hello, type: command, script: echo hello}\n"
    )
    return root


def _of(modules: set[str], *packages: str) -> set[str]:
    return {m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)}


# what only running a pipeline needs: the engine and what drives it, the manifest's
# models, asyncio, pydantic
RUN_ONLY = ("swell.engine", "swell.runtime", "swell.manifest", "asyncio", "pydantic")


@pytest.mark.parametrize(
    "args",
    [
        ("list",),
        ("list", "-o", "json"),
        ("status",),
        ("status", "-o", "json"),
        ("logs",),
    ],
    ids=" ".join,
)
def test_commands_that_read_stored_runs_import_no_engine_manifest_or_pydantic(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """`swell list`, `status` and `logs` read the store and print: they start in a
    fraction of `swell run`'s time because they import none of what runs a pipeline
    (docs/performance.md, "Start-up")."""
    root = _one_step_project(tmp_path)
    ran = _swell("run", "one", cwd=root)
    assert ran.returncode == 0, ran.stderr
    imported = _imported(*args, cwd=root)
    assert "swell.store.sqlite.store" in imported  # it did read the store
    # the project root is found (manifest.discovery) and `--since` parsed (durations)
    allowed = {"swell.manifest", "swell.manifest.discovery", "swell.manifest.durations"}
    assert _of(imported, *RUN_ONLY) - allowed == set()


def test_validate_imports_no_run_loop_visit_machinery_or_store(tmp_path: Path) -> None:
    """`swell validate` needs the manifest's models and each step kind's lint rules
    (engine/steps/<kind>.py), not what runs a visit: no run loop, no visit machinery,
    no event models, no asyncio, no store."""
    root = _one_step_project(tmp_path)
    imported = _imported("validate", cwd=root)
    assert "swell.manifest.lint" in imported and "swell.engine.steps.command" in imported
    engine = _of(imported, "swell.engine") - {
        "swell.engine",
        "swell.engine.steps",
        "swell.engine.steps.base",
        "swell.engine.steps.registry",
        "swell.engine.steps.command",
    }
    assert engine == set()
    assert _of(imported, "swell.runtime", "swell.store", "swell.events.models", "asyncio") == set()


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("validate",),
        ("run", "one", "-o", "quiet"),
        ("list", "-n", "1"),
        ("status",),
        ("logs",),
    ],
    ids=" ".join,
)
def test_a_plain_command_line_imports_neither_typer_nor_click(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """typer and click cost ~70 ms to import: a command line of known options is
    parsed from the command's own declarations (swell.cli.quick)."""
    root = _one_step_project(tmp_path)
    assert _swell("run", "one", cwd=root).returncode == 0
    imported = _imported(*args, cwd=root)
    assert _of(imported, "typer", "click") == set()


def test_options_parsed_without_typer_take_effect(tmp_path: Path) -> None:
    root = _one_step_project(tmp_path)
    for _ in range(2):
        assert _swell("run", "one", "-o", "quiet", cwd=root).stdout == ""
    listed = _swell("-C", str(root), "list", "-n", "1", "--output=json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert len(json.loads(listed.stdout)) == 1
    status = _swell("--project", str(root), "status", "-o", "json", "--", cwd=tmp_path)
    assert json.loads(status.stdout)["status"] == "succeeded"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("list", "-n", "0"), "Invalid value for '--limit' / '-n': 0 is not in the range"),
        (("list", "--bogus"), "No such option '--bogus'"),
        (("run",), "Missing argument 'PIPELINE'"),
        (("run", "one", "--timeout", "0"), "Invalid value for --timeout: must be more than 0"),
        (("status", ""), "a run id cannot be empty"),
        (("list", "-o", "yaml"), "Invalid value for '--output' / '-o'"),
        (("-C",), "Option '-C' requires an argument"),
    ],
)
def test_usage_errors_are_typers_one_message_and_exit_2(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    root = _one_step_project(tmp_path)
    done = _swell(*args, cwd=root)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
    assert "Error: " in done.stderr
    listed = _swell("list", "-o", "json", cwd=root)  # and nothing ran
    assert (listed.returncode, listed.stdout.strip()) == (0, "[]"), listed.stderr


@pytest.mark.parametrize("command", ["run", "validate", "list", "status", "logs"])
def test_a_commands_help_lists_its_options(tmp_path: Path, command: str) -> None:
    done = _swell(command, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: ") and "--help" in done.stdout
    assert "--output" in done.stdout


def test_reading_runs_parses_no_yaml_where_wave_yaml_names_no_store(tmp_path: Path) -> None:
    """`runtime.store` is looked for without the YAML parser: a project named
    "store-bench" has no `store:` key, and its runs are read without parsing wave.yaml."""
    root = _one_step_project(tmp_path)
    (root / "wave.yaml").write_text(
        "apiVersion: v1\nkind: WaveManifest\nmetadata: {name: store-bench}\n"
        "runtime: {circuit_breaker: {limit: 5}}\n"
    )
    assert _swell("run", "one", cwd=root).returncode == 0
    imported = _imported("list", cwd=root)
    assert "swell.store.sqlite.store" in imported and "yaml" not in imported


def test_validating_files_that_checked_before_parses_no_yaml_and_says_the_same(
    tmp_path: Path,
) -> None:
    """`swell validate` keeps what checking each file found in the manifest cache, as
    `swell run` keeps the loaded files: the second time, no YAML parser and no pydantic
    validator; the same problems, in the same words."""
    root = _one_step_project(tmp_path)
    (root / ".agents" / "pipelines" / "bad.yaml").write_text(
        "kind: WavePipeline\nmetadata: {name: bad}\nsteps:\n"
        "  - {id: a, type: command, script: echo a, max_visits: lots}\n"
    )
    first, second = (_swell("validate", cwd=root) for _ in range(2))
    assert first.returncode == second.returncode == 1
    assert "max_visits" in first.stderr + first.stdout
    assert (first.stdout, first.stderr) == (second.stdout, second.stderr)
    code = (
        "import sys; sys.argv = ['swell', 'validate']\n"
        "from swell.cli import app\n"
        "try:\n    app.main()\nexcept SystemExit:\n    pass\n"
        "print('yaml' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.stderr.strip().splitlines()[-1] == "False"


def test_a_run_of_built_in_kinds_looks_for_no_plugins(tmp_path: Path) -> None:
    """Which packages declare swell plugins is only asked when a name is not built in:
    asking reads every installed package's metadata (docs/performance.md)."""
    root = _one_step_project(tmp_path)
    code = (
        "import sys, importlib.metadata as md\n"
        "asked = []\n"
        "real = md.entry_points\n"
        "def entry_points(**kw):\n"
        "    asked.append(kw.get('group'))\n"
        "    return real(**kw)\n"
        "md.entry_points = entry_points\n"
        "sys.argv = ['swell', 'run', 'one']\n"
        "from swell.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(*[g for g in asked if str(g).startswith('swell')], file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert "run succeeded" in done.stdout, done.stderr
    assert done.stderr.strip().splitlines()[-1:] in ([], [""])


def test_showing_runs_that_ended_tests_no_run_lock(tmp_path: Path) -> None:
    """Which process executes a run is asked (a lock test, and hashing its id to the
    lock's byte) only for a run that is running: `swell list` and `swell status` of
    ended runs import no hashlib."""
    root = _one_step_project(tmp_path)
    ran = _swell("run", "one", cwd=root)
    assert ran.returncode == 0, ran.stderr
    listed = _swell("list", cwd=root)
    assert listed.returncode == 0 and " succeeded " in listed.stdout, listed.stderr
    assert "hashlib" not in _imported("list", cwd=root)
    shown = _swell("status", cwd=root)
    assert shown.returncode == 0 and "status    succeeded" in shown.stdout, shown.stderr
    assert "hashlib" not in _imported("status", cwd=root)
