"""A visit of a `type: command` step (engine/steps/command.py): render the script, run
it in the workspace, keep its output. Apart from the kind, so that lint, which imports
the kind, does not import this (docs/performance.md, "Start-up")."""

from __future__ import annotations

import errno

from swell.engine.visit.context import StepResult, VisitContext
from swell.engine.visit.inputs import prepare
from swell.engine.visit.output_context import output_namespace
from swell.events.models import Outcome, Warning
from swell.process import DEFAULT_MAX_OUTPUT, run_process
from swell.templates.expressions import ExpressionError
from swell.templates.render import Rendered, render_script, unset_warnings
from swell.workspace.artifacts import write_log
from swell.workspace.manager import WorkspaceError, script_dir, workspace_config
from swell.workspace.shell import shell_for

TAIL_CHARS = 4000


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


def too_big(rendered: Rendered) -> str:
    """Why a script whose values each fit did not start: together with the environment
    they pass the system's limit on what a new process is given (ARG_MAX)."""
    largest = sorted(rendered.env, key=lambda name: -len(rendered.env[name]))[:3]
    named = ", ".join(f"{rendered.sources[n]} {len(rendered.env[n]):,} bytes" for n in largest)
    return (
        "script not run: its values and environment together are more than the system "
        "lets a process start with (Argument list too long"
        + (f"; the largest values: {named}" if named else "")
        + "). Fix: have the script read large values from their files, by path"
    )


async def run_script(ctx: VisitContext, script: str) -> StepResult:
    """Run `script`, the visit's step's (`command.script_of`)."""
    step = ctx.step
    inputs = prepare(ctx)  # before rendering: it adds `deps.*` and `artifacts.<dep>.*`
    if inputs.problems:
        return StepResult(
            outcome="failure",
            error="; ".join(inputs.problems),
            events=inputs.events,
            retryable=False,
        )
    try:
        # a script without `{{` has no placeholder: nothing to read or place
        rendered = render_script(script, ctx.namespace) if "{{" in script else Rendered(script)
    except ExpressionError as exc:  # a script `swell validate` refuses (or a bad template)
        return StepResult(
            outcome="failure", error=f"script not run: {exc}", events=inputs.events, retryable=False
        )
    notes = inputs.events + [
        ctx.event(Warning(message=w)) for w in unset_warnings(rendered.missing)
    ]
    env = {**ctx.command_env(), **inputs.env, **rendered.env}
    argv, refusal = shell_for(rendered.text, env.get("PATH"))
    if argv is None:
        refused = f"script not run: {refusal}"
        return StepResult(outcome="failure", error=refused, events=notes, retryable=False)
    try:
        steps = {s.id: s for s in ctx.plan.pipeline.pipeline.steps}
        cwd = script_dir(ctx.workspace.path, workspace_config(steps, step))
    except WorkspaceError as exc:
        return StepResult(outcome="failure", error=str(exc), events=notes, retryable=False)
    runtime = ctx.plan.project.manifest.runtime
    timeout = ctx.timeout_seconds()
    try:
        result = await run_process(
            argv,
            cwd=cwd,
            env=env,
            timeout=timeout,
            grace=runtime.timeouts.process_grace_seconds or 3.0,
            max_output=runtime.artifacts.max_stdout_size or DEFAULT_MAX_OUTPUT,
        )
    except OSError as exc:
        if exc.errno != errno.E2BIG:
            raise
        return StepResult(outcome="failure", error=too_big(rendered), events=notes)
    combined = result.stdout
    if result.stderr:
        combined += ("\n" if combined and not combined.endswith("\n") else "") + result.stderr
    mask = ctx.services.redactor.text if ctx.services.redactor else str
    log = write_log(ctx.plan.run_dir, step.id, ctx.visit, mask(result.stdout), mask(result.stderr))
    if log is not None:
        notes.append(ctx.event(log))
    ok = result.exit_code == 0
    if result.timed_out:
        error = f"timed out after {timeout:g}s\n{tail(combined, 1000)}".rstrip()
    elif not ok:
        error = f"exit code {result.exit_code}\n{tail(combined, 1000)}".rstrip()
    else:
        error = None
    outcome: Outcome = "success" if ok else "failure"
    return StepResult(
        outcome=outcome,
        error=error,
        exit_code=result.exit_code,
        output_tail=tail(combined),
        outputs=output_namespace(result.stdout, result.stderr, result.exit_code, outcome),
        stdout=result.stdout,
        events=notes,
        outputs_dir=cwd,
    )
