"""Shared fixtures: every test gets its own state directory and, when asked, a copy
of the example project; CLI helpers run `swell` the way a user does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from postgres_server import postgres_server  # noqa: F401 - a fixture for every test module
from twins.proxy import proxy  # noqa: F401 - a fixture for every test module

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


@pytest.fixture(scope="session")
def manifest_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's cache of validated manifests (manifest/cache.py), never the user's."""
    return tmp_path_factory.mktemp("swell-cache")


@pytest.fixture(autouse=True)
def isolated_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, manifest_cache: Path) -> Path:
    """No test ever reads or writes a real project's .swell directory (or the user's
    cache)."""
    state = tmp_path / "state"
    monkeypatch.setenv("SWELL_STATE_DIR", str(state))
    monkeypatch.setenv("SWELL_CACHE_DIR", str(manifest_cache))
    monkeypatch.delenv("SWELL_STORE", raising=False)  # SQLite in `state` unless a test says
    return state


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A fresh copy of examples/ (without any state it may carry)."""
    dest = tmp_path / "project"
    shutil.copytree(EXAMPLES, dest, ignore=shutil.ignore_patterns(".swell"))
    return dest


def swell_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "swell", *args]


def swell(
    *args: str, cwd: Path, timeout: float = 120, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI to completion, as a user would from `cwd`."""
    return subprocess.run(
        swell_cmd(*args),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def swell_json(*args: str, cwd: Path) -> Any:
    result = swell(*args, "-o", "json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def start_swell(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        swell_cmd(*args),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def wait_for(predicate: Callable[[], Any], timeout: float = 30, interval: float = 0.1) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def write_pipeline(project: Path, name: str, text: str) -> Path:
    path = project / ".agents" / "pipelines" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def run_id_of(stdout: str) -> str:
    first = stdout.splitlines()[0]
    assert first.startswith("run "), stdout
    return first.split()[1]


def events(project: Path, run_id: str) -> list[dict[str, Any]]:
    result = swell("logs", run_id, "-o", "json", cwd=project)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def process_gone(marker: str) -> bool:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    return out.returncode != 0


__all__ = [
    "EXAMPLES",
    "REPO",
    "events",
    "process_gone",
    "run_id_of",
    "start_swell",
    "swell",
    "swell_json",
    "wait_for",
    "write_pipeline",
]
