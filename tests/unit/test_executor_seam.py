"""The CLI and the dashboard reach runs through the Executor seam (executors/base.py)
and never through one engine's own modules (docs/architecture.md, "The executor")."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "swell"
CALLERS = sorted([*(SRC / "cli").glob("*.py"), *(SRC / "web").glob("*.py")])
ENGINE_MODULES = ("swell.executors.temporal", "swell.executors.local", "swell.cli.worker")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return found


@pytest.mark.parametrize("path", CALLERS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_callers_use_executor_for_and_never_an_engine_s_modules(path: Path) -> None:
    if path.name == "worker.py" and path.parent.name == "cli":
        return  # `swell worker` serves the Temporal engine itself: no caller of the seam
    for name in _imports(path):
        assert not name.startswith(ENGINE_MODULES), f"{path.parent.name}/{path.name}: {name}"
