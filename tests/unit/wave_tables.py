"""Helpers of the `test_wave_tables_*` modules: each mirrors a table of Wave's own Go
tests (re-cinq/wave at 6b82c89e), case by case, with inputs of our own; a case id
names the Wave test it mirrors (`FILE:TestName/row`). docs/conformance.md, "Wave's
test tables", counts them."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from swell.contracts.base import ContractContext, ContractResult, RunAgent
from swell.contracts.registry import default_contract_types
from swell.manifest.models import Contract, Step


class Workspace:
    """A step's workspace and its project, in tmp_path, to run a real contract in."""

    def __init__(self, tmp_path: Path) -> None:
        self.path = tmp_path / "workspace"
        self.project = tmp_path / "project"
        self.run_dir = tmp_path / "run"
        for d in (self.path, self.project, self.run_dir):
            d.mkdir()

    def write(self, relative: str, text: str, base: Path | None = None) -> Path:
        path = (base or self.path) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def check(
        self,
        contract: dict[str, Any],
        *,
        step: dict[str, Any] | None = None,
        artifacts: dict[str, str] | None = None,
        stdout: str | None = None,
        run_agent: RunAgent | None = None,
    ) -> ContractResult:
        """The contract's result, as the visit's handover gets it."""
        parsed = Contract.model_validate(contract)
        kind = default_contract_types().get(parsed.type)
        ctx: ContractContext[Any] = ContractContext(
            settings=kind.Settings.model_validate(parsed.settings),
            index=0,
            step=Step.model_validate(step or {"id": "work"}),
            workspace=self.path,
            project_root=self.project,
            run_dir=self.run_dir,
            visit=1,
            namespace={"input": "x", "project": {}, "context": {}, "artifacts": {}},
            command_env=dict(os.environ),
            artifacts=artifacts or {},
            stdout=stdout,
            diff=lambda: "",
            default_timeout=30.0,
            run_agent=run_agent,  # a stand-in for the model a reviewer or judge asks
        )
        ctx.must_pass = parsed.must_pass  # as the handover hands it (engine/visit/handover.py)
        result = asyncio.run(kind.check(ctx))
        assert result.passed or result.error, "a failure always says why"
        return result
