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


@pytest.mark.parametrize("package", ["manifest", "events", "templates"])
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


@pytest.mark.parametrize("module", ["loop/decisions.py", "loop/policies.py", "loop/run_loop.py"])
def test_the_completion_core_and_the_run_loop_have_no_clock_files_or_sink(module: str) -> None:
    """Decisions and the one loop must be replayable anywhere (a Temporal workflow
    included): the drivers (engine/loop/runner.py, the workflow) own the clock and I/O."""
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
        "swell.engine.visit.execute",
        "swell.engine.loop.runner",
    }


# ------------------------------------------------------------------ the engine's packages
# docs/architecture.md, "Layout": loop/ decides, visit/ runs one visit, agent/ runs an
# agent for it, steps/ are the kinds (steps/compose/ what composition kinds share)

LOOP_CORE = ["graph", "state", "decisions", "policies", "retry", "limits", "cost", "run_loop"]


def _engine_imports(path: Path) -> set[str]:
    """The engine modules `path` imports when it runs (not for the type checker)."""
    found = set()
    for module, name in _runtime_imports(path):
        target = f"{module}.{name}"
        found.add(
            target
            if (SRC.parent / target.replace(".", "/")).with_suffix(".py").exists()
            else module
        )
    return {m for m in found if m.startswith("swell.engine.")}


@pytest.mark.parametrize("name", LOOP_CORE)
def test_the_loop_core_imports_no_visit_internals_agent_or_kind(name: str) -> None:
    """The loop knows a visit by what it returns (visit/context.py) and a kind by the
    registry; the local driver (loop/runner.py) alone launches visits."""
    allowed = ("swell.engine.visit.context", "swell.engine.visit.output_context")
    for module in _engine_imports(SRC / "engine" / "loop" / f"{name}.py"):
        assert module.startswith("swell.engine.loop.") or module in {
            *allowed,
            "swell.engine.steps.registry",
        }, f"loop/{name}.py imports {module}"


@pytest.mark.parametrize("package", ["visit", "agent"])
def test_a_visit_and_an_agent_import_no_step_kind(package: str) -> None:
    """Kinds reach a visit through the registry in its context, never by import."""
    for path in _modules(f"engine/{package}"):
        for module in _engine_imports(path):
            assert not module.startswith("swell.engine.steps"), f"{path.name}: {module}"


# what an agent may read of a visit: its context, the forge, and the sandbox it runs in
AGENT_VISIT_IMPORTS = {
    "swell.engine.visit.context",
    "swell.engine.visit.forge",
    "swell.engine.visit.sandboxing",
}


def test_an_agent_imports_no_driver_and_no_visit_internals() -> None:
    for path in _modules("engine/agent"):
        for module in _engine_imports(path):
            assert module not in {"swell.engine.loop.runner", "swell.engine.loop.run_loop"}
            if module.startswith("swell.engine.visit."):
                assert module in AGENT_VISIT_IMPORTS, f"{path.name}: {module}"


def test_compose_imports_no_step_kind() -> None:
    for path in _modules("engine/steps/compose"):
        for module in _engine_imports(path):
            if module.startswith("swell.engine.steps."):
                assert module.startswith("swell.engine.steps.compose."), f"{path.name}: {module}"


def test_templates_import_nothing_of_swell_but_errors() -> None:
    """manifest/ and the engine import templates/, never the other way round."""
    for path in _modules("templates"):
        for module, _ in _runtime_imports(path):
            assert module.startswith("swell.templates") or module == "swell.errors", (
                f"{path.name}: {module}"
            )


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


# ------------------------------------------------------------------ the store's imports


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path) -> list[tuple[str, str]]:
    """(module, name) of each `from swell... import name` and `import swell...` run at
    import or call time: a block under `if TYPE_CHECKING:` is for the type checker only."""
    tree = ast.parse(path.read_text())
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING")
        for stmt in node.body
        for inner in ast.walk(stmt)
    }
    found: list[tuple[str, str]] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path.relative_to(SRC)}: a relative import (name the module)"
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("swell"):
            found += [(node.module or "", alias.name) for alias in node.names]
        elif isinstance(node, ast.Import):
            found += [(a.name, "") for a in node.names if a.name.startswith("swell")]
    return found


def _graph(package: str = "") -> dict[str, set[str]]:
    """Each module of swell (or of one of its packages) -> the modules of swell it
    imports, at import time or inside a function (a name that is a module counts as
    that module: `from swell.store.sqlite import migrations`). A module's parent
    packages, which Python imports first, are not edges: an `__init__` may pick a
    submodule inside a function (`executors.executor_for`)."""
    modules = {_module_name(p): p for p in _modules(package)}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for module, imported in _runtime_imports(path):
            target = f"{module}.{imported}" if f"{module}.{imported}" in modules else module
            if target in modules and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for target in sorted(graph[node]):
            if found := visit(target, [*path, node]):
                return found
        done.add(node)
        return None

    for node in sorted(graph):
        if found := visit(node, []):
            return found
    return None


def test_swell_has_no_import_cycle() -> None:
    """Between any modules of swell. Imports inside functions count: they only defer a
    cycle to the first call; `if TYPE_CHECKING:` imports do not (they never run)."""
    assert _cycle(_graph()) is None


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _backend(module: str) -> str | None:
    """The backend package (or module) a store module belongs to; None: shared."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in ("sqlite", "postgres", "memory") else None


@pytest.mark.parametrize("path", _modules("store"), ids=lambda p: str(p.relative_to(SRC)))
def test_a_store_module_uses_no_other_backend(path: Path) -> None:
    """A backend imports shared store modules and its own package, never another
    backend (least of all its private names); shared modules import no backend, and
    nothing asks a store's type: callers ask its capabilities (store/capabilities.py).
    `location.open_store` alone opens backends by name."""
    mine = _backend(_module_name(path))
    for module, name in _runtime_imports(path):
        theirs = _backend(module) or _backend(f"{module}.{name}")
        if theirs is None or theirs == mine:
            continue
        assert path.name == "location.py" and not name.startswith("_"), f"{module}.{name}"
    assert "__module__" not in path.read_text(), "a store's type decides nothing"


def test_nothing_outside_the_store_names_a_backend() -> None:
    """Callers ask a store's capabilities (store/capabilities.py), never its class."""
    backends = re.compile(r"\b(SqliteStore|PostgresStore|MemoryStore)\b|__module__ ==")
    for path in SRC.rglob("*.py"):
        # api.py hands the in-memory tables to plugins, to build backends on
        if path.is_relative_to(SRC / "store") or path == SRC / "api.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            assert not backends.search(line), f"{path.relative_to(SRC)}:{number}: {line.strip()}"
