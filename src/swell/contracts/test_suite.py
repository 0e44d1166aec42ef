"""`type: test_suite`: a shell command whose exit code 0 means the contract holds.

The command is rendered like a command step's script (`render_script`): every
placeholder becomes a quoted environment-variable reference, except `{{ project.X }}`,
which is owner-written shell code and is inserted as it is. `ctx.render` would not do:
it splices values as text, and `context.KEY` (set from command and agent output),
`input` and artifact paths can all appear in a command, so model output could become
shell code.

`dir`: by default the project found in the step's workspace by its marker files
(`MARKERS`: pyproject.toml, package.json, go.mod, Cargo.toml, ...), searched from where
the step's script runs (its `./` mount) up to the workspace root, else the workspace;
`project_root` for the project root; or a path inside the workspace. Wave searches
upwards past the workspace into the user's checkout; swell stops at the workspace,
since the work the suite checks is there. The command runs with `sh`, or bash when it
uses a bash feature (as command steps do). `timeout`: seconds or a duration (`120s`, `5m`), default
the step's timeout. The process runs in its own group via `run_process`; a timeout
ends the whole group.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.contracts.non_empty_file import workspace_path
from swell.errors import Problem
from swell.manifest.durations import parse_duration
from swell.manifest.lint_context import LintScope
from swell.process import run_process
from swell.templates.expressions import ExpressionError
from swell.templates.render import ValueUnfit, render_script
from swell.workspace.manager import script_dir
from swell.workspace.paths import PathEscape
from swell.workspace.shell import shell_for

TAIL_LINES = 60
TAIL_CHARS = 4000
MAX_OUTPUT = 1024 * 1024  # the runner keeps the end of the output; the tail is all we show
GRACE_SECONDS = 3.0
ENV_PREFIX = "SWELL_C"
# files that mark a project's root (Wave looks for the first four)
MARKERS = (
    "pyproject.toml",
    "package.json",
    "go.mod",
    "Cargo.toml",
    "setup.py",
    "setup.cfg",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "Gemfile",
    "composer.json",
    "deno.json",
    "mix.exs",
)


def tail(text: str, lines: int = TAIL_LINES, chars: int = TAIL_CHARS) -> str:
    """The end of `text`: at most `lines` lines and `chars` characters, marked when cut."""
    kept = text.rstrip("\n").split("\n")
    cut = len(kept) > lines
    result = "\n".join(kept[-lines:])
    if len(result) > chars:
        result, cut = result[-chars:], True
    return "…" + result if cut else result


class TestSuiteSettings(ContractSettings):
    command: str | None = None
    dir: str | None = None
    timeout: str | int | float | None = None


def marker_root(start: Path, boundary: Path) -> Path | None:
    """The nearest directory from `start` up to `boundary` holding a project marker."""
    current, stop = start.resolve(), boundary.resolve()
    while True:
        if any((current / marker).is_file() for marker in MARKERS):
            return current
        if current == stop or stop not in current.parents:
            return None
        current = current.parent


def _directory(ctx: ContractContext[TestSuiteSettings]) -> Path:
    raw = (ctx.settings.dir or "").strip()
    if raw == ".":
        return ctx.workspace
    if raw == "":
        start = script_dir(ctx.workspace, ctx.step.workspace)
        return marker_root(start, ctx.workspace) or start
    if raw == "project_root":
        return ctx.project_root
    return workspace_path(ctx, raw, "dir")


def _timeout(ctx: ContractContext[TestSuiteSettings]) -> float:
    if ctx.settings.timeout is None:
        return ctx.default_timeout
    seconds = parse_duration(ctx.settings.timeout)
    if seconds <= 0:
        raise ValueError(f"timeout must be positive, not {ctx.settings.timeout!r}")
    return seconds


def _failed(error: str, **details: Any) -> ContractResult:
    return ContractResult(passed=False, error=error, details=details)


class TestSuite(ContractType[TestSuiteSettings]):
    name = "test_suite"
    Settings = TestSuiteSettings
    script_fields = ("command",)

    def problems(self, settings: TestSuiteSettings, scope: LintScope) -> list[Problem]:
        if settings.command:
            return []
        return [scope.problem((), "a test_suite contract needs `command`")]

    async def check(self, ctx: ContractContext[TestSuiteSettings]) -> ContractResult:
        return await _check(ctx)

    def brief(self, ctx: ContractContext[TestSuiteSettings]) -> str:
        command = ctx.render(ctx.settings.command or "").strip()
        if not command:
            return ""
        return (
            "When you are done, this command checks your work; the step fails if it "
            f"exits non-zero:\n```\n{command}\n```"
        )


async def _check(ctx: ContractContext[TestSuiteSettings]) -> ContractResult:
    command = ctx.settings.command
    if not command or not command.strip():
        return _failed("test_suite contract needs `command`: the command to run")
    try:
        rendered = render_script(command, ctx.namespace, env_prefix=ENV_PREFIX)
    except ValueUnfit as exc:
        return _failed(f"command not run: {exc}")
    except ExpressionError as exc:
        return _failed(f"invalid template in command: {exc}")
    if not rendered.text.strip():
        return _failed(f"command {command!r} renders to nothing (is the project variable set?)")
    try:
        cwd = _directory(ctx)
        timeout = _timeout(ctx)
    except (PathEscape, ValueError) as exc:
        return _failed(str(exc))
    if not cwd.is_dir():
        return _failed(f"dir {ctx.settings.dir!r} is not a directory ({cwd})", dir=str(cwd))
    argv, refusal = shell_for(rendered.text, ctx.command_env.get("PATH"))
    if argv is None:
        return _failed(f"command not run: {refusal}", dir=str(cwd))
    try:
        result = await run_process(
            argv,
            cwd=cwd,
            env={**ctx.command_env, **rendered.env},
            timeout=timeout,
            grace=GRACE_SECONDS,
            max_output=MAX_OUTPUT,
        )
    except OSError as exc:
        return _failed(f"could not start the command in {cwd}: {exc}", dir=str(cwd))
    output = result.stdout
    if result.stderr:
        output += ("\n" if output and not output.endswith("\n") else "") + result.stderr
    output_tail = tail(output)
    details: dict[str, Any] = {
        "command": rendered.preview,
        "dir": str(cwd),
        "exit_code": result.exit_code,
        "duration": round(result.duration, 3),
        "timed_out": result.timed_out,
        "output_tail": output_tail,
    }
    if result.timed_out:
        error = f"timed out after {timeout:g}s (the command and its children were stopped)"
    elif result.exit_code is not None and result.exit_code < 0:
        error = f"killed by signal {-result.exit_code}"
    elif result.exit_code != 0:
        error = f"exit code {result.exit_code}"
    else:
        return ContractResult(passed=True, details=details)
    return ContractResult(
        passed=False,
        error=f"{error}\n{output_tail}".rstrip() if output_tail else error,
        details=details,
    )


TYPE = TestSuite()
