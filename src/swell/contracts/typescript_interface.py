"""`type: typescript_interface`: a TypeScript file type-checks under `tsc --strict`.

Runs `tsc --noEmit --strict --skipLibCheck FILE` in the step's workspace, where
`schema_path` (required, a template) names FILE. It fails on a non-zero exit or on
any output at all (tsc prints only diagnostics), showing the end of what tsc said.
`tsc` is looked up on the PATH test commands get (a project's
`node_modules/.bin` is not searched: put it on PATH). Without it the check cannot
be made: the contract passes with the warning "tsc is not installed …" in the run's
events, or fails when the contract sets `must_pass: true`, as in Wave. `timeout`:
seconds or a duration, default the step's timeout.

Wave resolves `schema_path` against the directory wave was started in; swell takes
the step's workspace, where the step's work is (a worktree holds the project too).
"""

from __future__ import annotations

import os
import shutil

from swell.contracts.base import (
    ContractContext,
    ContractResult,
    ContractSettings,
    ContractType,
    timeout_problem,
)
from swell.contracts.non_empty_file import shown, workspace_path
from swell.contracts.test_suite import tail
from swell.errors import Problem
from swell.manifest.durations import parse_duration
from swell.manifest.lint_context import LintScope
from swell.process import run_process
from swell.workspace import safe
from swell.workspace.paths import PathEscape

MAX_OUTPUT = 256 * 1024


class TypeScriptSettings(ContractSettings):
    schema_path: str | None = None
    timeout: str | int | float | None = None


def missing_tsc(ctx: ContractContext[TypeScriptSettings], name: str) -> ContractResult:
    """No compiler: a named warning, or a failure under `must_pass: true`."""
    message = f"tsc is not installed (not on PATH); {name} was not type-checked"
    if ctx.must_pass:
        return ContractResult(
            passed=False,
            error=f"typescript_interface: {message}, and the contract says must_pass: true "
            "(install it: npm install -g typescript)",
        )
    ctx.notes.append(f"typescript_interface: {message}")
    return ContractResult(passed=True, details={"warn": message, "skipped": True})


class TypeScriptInterface(ContractType[TypeScriptSettings]):
    name = "typescript_interface"
    Settings = TypeScriptSettings

    def problems(self, settings: TypeScriptSettings, scope: LintScope) -> list[Problem]:
        found = []
        if not settings.schema_path:
            found.append(
                scope.problem((), "a typescript_interface contract needs `schema_path` (the file)")
            )
        timeout = timeout_problem(settings.timeout)
        if timeout:
            found.append(scope.problem(("timeout",), timeout))
        return found

    async def check(self, ctx: ContractContext[TypeScriptSettings]) -> ContractResult:
        raw = ctx.settings.schema_path
        if not raw:
            return ContractResult(
                passed=False, error="typescript_interface contract needs `schema_path`"
            )
        try:
            path = workspace_path(ctx, raw, "schema_path")
            timeout = (
                parse_duration(ctx.settings.timeout)
                if ctx.settings.timeout is not None
                else ctx.default_timeout
            )
        except (PathEscape, ValueError) as exc:
            return ContractResult(passed=False, error=f"typescript_interface: {exc}")
        name = shown(path, ctx)
        tsc = shutil.which("tsc", path=ctx.command_env.get("PATH"))
        if tsc is None:
            return missing_tsc(ctx, name)
        try:  # tsc would wait on a FIFO for as long as its timeout
            os.close(safe.open_regular(path))
        except safe.Unreadable as exc:
            return ContractResult(passed=False, error=f"typescript_interface: {name} {exc.reason}")
        argv = [tsc, "--noEmit", "--strict", "--skipLibCheck", str(path)]
        try:
            done = await run_process(
                argv, cwd=ctx.workspace, env=ctx.command_env, timeout=timeout, max_output=MAX_OUTPUT
            )
        except (FileNotFoundError, PermissionError):
            return missing_tsc(ctx, name)
        said = (done.stdout + done.stderr).strip()
        details = {"file": name, "exit_code": done.exit_code}
        if done.timed_out:
            error = f"typescript_interface: tsc did not finish checking {name} in {timeout:g}s"
            return ContractResult(passed=False, error=error, details=details)
        if done.exit_code == 0 and not said:
            return ContractResult(passed=True, details=details)
        why = f"exit code {done.exit_code}" if done.exit_code else "it reported diagnostics"
        return ContractResult(
            passed=False,
            error=f"typescript_interface: tsc rejected {name} ({why}):\n{tail(said or '')}",
            details=details,
        )


TYPE = TypeScriptInterface()
