"""The dependency rules of docs/architecture.md, checked on the source."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "swell"
ALLOWED_ADAPTER_MODULES = {"swell.adapters", "swell.adapters.base", "swell.adapters.registry"}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("swell")}


def _modules(package: str) -> list[Path]:
    return sorted((SRC / package).rglob("*.py"))


@pytest.mark.parametrize("path", _modules("engine"), ids=lambda p: p.name)
def test_engine_imports_no_store_cli_web_or_concrete_adapter(path: Path) -> None:
    for name in _imports(path):
        assert not name.startswith(("swell.store", "swell.cli", "swell.web", "swell.runtime")), name
        if name.startswith("swell.adapters"):
            assert (
                name.rsplit(".", 1)[0] in ALLOWED_ADAPTER_MODULES or name in ALLOWED_ADAPTER_MODULES
            ), name


@pytest.mark.parametrize("package", ["manifest", "events"])
def test_lower_layers_do_not_import_upward(package: str) -> None:
    for path in _modules(package):
        for name in _imports(path):
            assert not name.startswith(
                ("swell.engine", "swell.store", "swell.cli", "swell.runtime", "swell.adapters")
            ), f"{path.name} imports {name}"


def test_store_does_not_import_the_engine() -> None:
    for path in _modules("store"):
        for name in _imports(path):
            assert not name.startswith(("swell.engine", "swell.cli", "swell.runtime")), (
                f"{path.name}: {name}"
            )


def test_nothing_imports_the_cli() -> None:
    for path in SRC.rglob("*.py"):
        if path.parent.name == "cli" or path.name == "__main__.py":
            continue
        assert not any(n.startswith("swell.cli") for n in _imports(path)), path


def test_contracts_import_no_engine() -> None:
    for path in _modules("contracts"):
        for name in _imports(path):
            assert not name.startswith(("swell.engine", "swell.store", "swell.runtime")), (
                f"{path.name}: {name}"
            )


@pytest.mark.parametrize("module", ["completion.py", "policies.py", "run_loop.py"])
def test_the_completion_core_and_the_run_loop_have_no_clock_files_or_sink(module: str) -> None:
    """Decisions and the one loop must be replayable anywhere (a Temporal workflow
    included): the drivers (engine/runner.py, the workflow) own the clock and I/O."""
    tree = ast.parse((SRC / "engine" / module).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    }
    assert not imported & {"time", "datetime", "asyncio", "os", "pathlib", "subprocess", "random"}
    assert not _imports(SRC / "engine" / module) & {
        "swell.events.bus",
        "swell.process",
        "swell.engine.visit",
        "swell.engine.runner",
    }


def test_step_kinds_are_asked_not_named() -> None:
    """Only a kind's own module names it: runner, graph, lint and render ask the kind."""
    names = "|".join(("prompt", "command", "conditional", "gate", "pipeline"))
    # `step.kind == "gate"`, or `step.kind in ("gate", ...)`: a list of names
    pattern = re.compile(rf"kind\s*(==|!=)\s*[\"']({names})[\"']|\.kind\s+(not\s+)?in\s*[(\[{{]")
    for path in SRC.rglob("*.py"):
        if path.parent.name == "steps":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            assert not pattern.search(line), f"{path.relative_to(SRC)}:{number}: {line.strip()}"


@pytest.mark.parametrize("path", sorted(SRC.rglob("*.py")), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_over_600_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= 600
