"""Helpers for the unit tests: write a real project to tmp_path and load/lint it as
`swell` does. (Not a conftest.py: tests/conftest.py owns the `conftest` module name.)"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from swell.contracts.registry import default_contract_types
from swell.engine.steps.registry import default_step_kinds
from swell.errors import Problem
from swell.manifest.lint import LintContext, lint_pipeline, lint_project
from swell.manifest.loader import LoadedPipeline, Project, load_pipeline, load_project

MANIFEST = """\
kind: WaveManifest
project:
  test_command: "pytest -q"
adapters:
  claude: {}
personas:
  dev:
    adapter: claude
"""


class FakeOptions(BaseModel):
    """Options model for the `optioned` adapter type used in lint tests."""

    model_config = ConfigDict(extra="forbid")

    script: str


# the real step kinds and contract types: their own rules are what lint checks
LINT_CONTEXT = LintContext(
    step_kinds=default_step_kinds(),
    contract_types=default_contract_types(),
    adapter_types={"claude", "scripted", "optioned"},
    adapter_options=lambda kind: FakeOptions if kind == "optioned" else None,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


@dataclass
class ProjectDir:
    root: Path

    def manifest(self, text: str = MANIFEST) -> Path:
        return write(self.root / "wave.yaml", text)

    def pipeline(self, text: str, name: str = "p", where: str = ".agents/pipelines") -> Path:
        return write(self.root / where / f"{name}.yaml", text)

    def file(self, rel: str, text: str) -> Path:
        return write(self.root / rel, text)

    def load(self, name: str = "p") -> tuple[Project, LoadedPipeline]:
        return load_project(self.root), load_pipeline(self.root, name)

    def lint(self, name: str = "p", ctx: LintContext = LINT_CONTEXT) -> list[Problem]:
        """Project and pipeline problems, errors and warnings, in report order."""
        project, loaded = self.load(name)
        return lint_project(project, ctx).problems + lint_pipeline(project, loaded, ctx).problems


def make_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    """An empty project directory (made the cwd) holding the default wave.yaml."""
    monkeypatch.chdir(tmp_path)
    project = ProjectDir(tmp_path)
    project.manifest()
    return project


def at(problems: list[Problem], severity: str | None = "error") -> list[tuple[int, int, str]]:
    """(line, col, message) of each problem, optionally of one severity only."""
    return [(p.line, p.col, p.message) for p in problems if severity in (None, p.severity)]


def only(problems: list[Problem], needle: str) -> Problem:
    """The single problem whose message contains `needle`."""
    found = [p for p in problems if needle in p.message]
    assert len(found) == 1, f"expected one problem containing {needle!r}, got {problems}"
    return found[0]
