"""Prompt steps: a persona does the work through an agent adapter."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

from swell.adapters.base import AgentRequest
from swell.engine import relay, thread_context
from swell.engine.agents import (
    choose_adapter,
    choose_model,
    make_adapter,
    permissions,
    swell_bin,
    system_prompt,
    visit_env,
)
from swell.engine.context import StepResult, VisitContext
from swell.engine.handover import attempt_context, rework_header
from swell.engine.inputs import prepare
from swell.engine.outputs import output_namespace
from swell.engine.retry import retry_delay
from swell.engine.steps.base import StepKind
from swell.engine.visit import INJECTED_DIR
from swell.errors import TRANSIENT_KINDS, Problem
from swell.events import models as ev
from swell.manifest.lint_context import LintScope
from swell.manifest.suggest import unknown
from swell.manifest.template_names import FORGE_TYPES
from swell.manifest.templates import render_text
from swell.relay.settings import relay_settings
from swell.threads.fidelity import with_context
from swell.workspace import safe

INLINE_LIMIT = 20_000  # characters of an input artifact put into a tool-less agent's prompt


def task_prompt(ctx: VisitContext, has_tools: bool = True) -> tuple[str, list[str]]:
    exec_ = ctx.step.exec
    if exec_ is None:
        return "", []
    source = exec_.source
    if exec_.source_path:
        source = (ctx.plan.project.root / exec_.source_path).read_text(encoding="utf-8")
    rendered = render_text(source or "", ctx.namespace)
    return follow_up(ctx) + rendered.text + artifact_sections(ctx, has_tools), rendered.missing


def follow_up(ctx: VisitContext) -> str:
    """What a rework or retry visit is told first: the failure it must address."""
    reason = ctx.activation.reason
    if reason == "rework" and ctx.step.id in ctx.state.reworks:
        request = ctx.state.reworks[ctx.step.id]
        copy = None
        if request.feedback_path and Path(request.feedback_path).is_file():
            target = ctx.workspace.path / INJECTED_DIR / "review-feedback.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(request.feedback_path, target)
            copy = os.path.relpath(target, ctx.workspace.path)
        return rework_header(request, copy)
    if reason == "retry" and ctx.step.id in ctx.state.retries:
        return attempt_context(ctx.plan.run_dir, ctx.state.retries[ctx.step.id])
    return ""


def artifact_sections(ctx: VisitContext, has_tools: bool = True) -> str:
    """Tell the agent which files it was given and which it must write. An agent
    without tools cannot open or write files: it gets the inputs' contents instead,
    and its answer becomes its `source: stdout` artifacts."""
    step, root = ctx.step, ctx.workspace.path
    lines: list[str] = []
    injected = ctx.namespace.get("artifacts", {})
    inputs = [(ref, injected.get(ref.as_ or ref.artifact)) for ref in step.memory.inject_artifacts]
    if any(path for _, path in inputs):
        lines += ["", "## Input artifacts"]
        for ref, path in inputs:
            if not path:
                continue
            rel = os.path.relpath(path, root)
            lines.append(
                f"- {ref.as_ or ref.artifact}: `{rel}` (artifact '{ref.artifact}' of step '{ref.step}')"
            )
            if not has_tools:
                text = Path(path).read_text(encoding="utf-8", errors="replace")
                cut = "\n[… truncated]" if len(text) > INLINE_LIMIT else ""
                lines += ["```", text[:INLINE_LIMIT] + cut, "```"]
    files = [a for a in step.output_artifacts if a.source == "file" and a.path]
    if files and has_tools:
        lines += [
            "",
            "## Output artifacts",
            "Write these files (paths relative to your working directory):",
        ]
        for art in files:
            need = "required" if art.required else "optional"
            kind = f", {art.type}" if art.type else ""
            lines.append(f"- `{art.path}` ({art.name}; {need}{kind})")
    return "\n".join(lines) + ("\n" if lines else "")


def answer_to_outputs(ctx: VisitContext, text: str) -> list[str]:
    """As Wave does: a declared output file the agent did not write gets the agent's
    final answer (an agent that answers instead of writing still hands its work on).
    Returns the paths written."""
    written = []
    for art in ctx.step.output_artifacts:
        if art.source != "file" or not art.path:
            continue
        rel = render_text(art.path, ctx.namespace).text
        try:
            target = safe.place(ctx.workspace.path, rel)
            if os.path.lexists(target):
                continue
            safe.replace(target, text.encode("utf-8", errors="replace"))
        except safe.UnsafePath:
            continue  # the artifact check after the visit reports a path that cannot be used
        written.append(rel)
    return written


class Prompt(StepKind):
    name = "prompt"
    progress = "answer"

    def problems(self, scope: LintScope) -> list[Problem]:
        return _persona_problems(scope) + _source_problems(scope) + _adapter_problems(scope)

    async def run(self, ctx: VisitContext) -> StepResult:
        return await _visit(ctx)


def _persona_problems(scope: LintScope) -> list[Problem]:
    step, personas = scope.step, scope.project.manifest.personas
    if not step.persona and not step.adapter:
        return [scope.problem((), f"prompt step '{step.id}' needs a persona")]
    if step.persona and "{{" in step.persona:
        return _templated_persona(scope, step.persona)
    if step.persona and step.persona not in personas:
        return [scope.problem(("persona",), unknown("persona", step.persona, personas))]
    return []


def _templated_persona(scope: LintScope, name: str) -> list[Problem]:
    """Wave renders persona names (`{{ forge.type }}-commenter`): at least one forge
    must give a persona wave.yaml defines."""
    personas = scope.project.manifest.personas
    found = [f for f in FORGE_TYPES if render_text(name, {"forge": {"type": f}}).text in personas]
    if found:
        return []
    return [scope.problem(("persona",), f"no forge gives a persona of wave.yaml for '{name}'")]


def _source_problems(scope: LintScope) -> list[Problem]:
    step = scope.step
    if not step.exec or not (step.exec.source or step.exec.source_path):
        return [scope.problem((), f"prompt step '{step.id}' needs exec.source or exec.source_path")]
    if step.exec.source_path and not (scope.project.root / step.exec.source_path).is_file():
        return [
            scope.problem(
                ("exec", "source_path"), f"prompt file {step.exec.source_path} does not exist"
            )
        ]
    return []


def _adapter_problems(scope: LintScope) -> list[Problem]:
    """An unknown adapter, or one that cannot enforce the persona's denied tools."""
    step, m, known = scope.step, scope.project.manifest, scope.lint.adapter_types
    if step.adapter and step.adapter not in m.adapters and step.adapter not in known:
        return [
            scope.problem(("adapter",), unknown("adapter", step.adapter, [*m.adapters, *known]))
        ]
    persona = m.personas.get(step.persona or "")
    adapter = step.adapter or (persona.adapter if persona else None)
    if not adapter:
        return []
    kind = m.adapter_type(adapter)
    if kind not in known:
        return [
            scope.problem(
                ("persona",),
                f"adapter '{adapter}' is not available (known: {', '.join(sorted(known))})",
            )
        ]
    config = m.adapters.get(adapter)
    denied = (persona.permissions.deny if persona else []) + (
        config.default_permissions.deny if config else []
    )
    enforces = scope.lint.enforces_permissions
    if denied and enforces is not None and not enforces(kind):
        return [
            scope.problem(
                ("persona",),
                f"adapter '{adapter}' cannot enforce denied tools ({', '.join(denied)}); "
                "the run will record this",
                severity="warning",
            )
        ]
    return []


async def _visit(ctx: VisitContext) -> StepResult:
    project = ctx.plan.project
    persona = project.manifest.personas.get(ctx.step.persona or "")
    inputs = prepare(ctx)  # before the prompt is rendered: it adds `deps.*`
    if inputs.problems:
        return StepResult(outcome="failure", error="; ".join(inputs.problems), events=inputs.events)
    ctx.emit(inputs.events)
    try:
        adapter_name = choose_adapter(ctx, persona)
        adapter = make_adapter(ctx, adapter_name)
        task, missing = task_prompt(ctx, has_tools=adapter.capabilities.tools)
        allowed, denied = permissions(ctx, persona, adapter_name)
        model = choose_model(ctx, persona, adapter_name)
        system = system_prompt(project.root, persona)
    except (OSError, ValueError) as exc:
        return StepResult(outcome="failure", error=str(exc))

    warnings = [f"template variable '{m}' is not set; rendered empty" for m in missing]
    if denied and not adapter.capabilities.enforces_permissions:
        warnings.append(
            f"adapter '{adapter_name}' cannot enforce denied tools: {', '.join(denied)}"
        )
    thread = await thread_context.prepare(ctx, adapter_name, adapter)
    ctx.emit([ctx.event(e) for e in [*(ev.Warning(message=w) for w in warnings), *thread.events]])

    env = {**ctx.swell_env(), "SWELL_BIN": swell_bin()}
    if ctx.step.thread:
        env["SWELL_THREAD"] = ctx.step.thread
    request = AgentRequest(
        prompt=with_context(thread.preamble, task),
        system_prompt=system,
        workspace=ctx.workspace.path,
        model=model,
        allowed_tools=allowed,
        denied_tools=denied,
        resume_session=thread.resume_session,
        timeout_s=ctx.timeout_seconds(),
        temperature=persona.temperature if persona else None,
        env=visit_env(ctx, adapter, env),
        run_id=ctx.plan.run_id,
        step_id=ctx.step.id,
        visit=ctx.visit,
    )
    settings, problem = relay_settings(project.manifest, ctx.step, model)
    if problem:
        ctx.emit([ctx.event(ev.Warning(message=problem))])
    run = await relay.run(ctx, adapter, request, settings)
    attempt = 1
    while (
        run.result is not None
        and not run.result.success
        and run.result.error_kind in TRANSIENT_KINDS
    ):
        delay = retry_delay(ctx.step.retry, attempt)
        if delay is None:
            break
        attempt += 1
        message = f"{run.result.error_kind}: retrying in {delay:g}s (attempt {attempt}): {run.result.error}"
        ctx.emit([ctx.event(ev.Warning(message=message))])
        await asyncio.sleep(delay)
        run = await relay.run(ctx, adapter, request, settings)
    result = run.result
    if run.error or result is None:
        return StepResult(
            outcome="failure",
            tokens_in=run.tokens_in,
            tokens_out=run.tokens_out,
            error=run.error or f"adapter '{adapter_name}' ended without a result",
        )
    ok = result.success
    outcome: ev.Outcome = "success" if ok else "failure"
    if ok and result.text:
        answer_to_outputs(ctx, result.text)
    return StepResult(
        outcome=outcome,
        error=None if ok else f"{result.error_kind or 'agent'}: {result.error or 'failed'}",
        exit_code=0 if ok else 1,
        output_tail=result.text[-4000:] if result.text else None,
        outputs=output_namespace(result.text, "", 0 if ok else 1, outcome),
        stdout=result.text,
        tokens_in=result.usage.input_tokens + result.usage.cache_read_tokens + run.tokens_in,
        tokens_out=result.usage.output_tokens + run.tokens_out,
        cost_usd=result.usage.cost_usd or 0.0,
        round_content=result.text if ok else (result.text or result.error or ""),
        round_meta={
            "adapter": adapter_name,
            "model": model,
            "session_id": result.session_id,
            "files_changed": result.files_changed or None,
            "fidelity": thread.fidelity if ctx.step.thread else None,
            "native_resume": thread.native_resume if ctx.step.thread else None,
            "relays": run.relays or None,
        },
    )


KIND = Prompt()
