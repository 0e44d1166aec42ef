"""Prompt steps: a persona does the work through an agent adapter."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from swell.adapters.base import AgentAdapter, AgentRequest, AgentResult, Capabilities
from swell.engine.agent import relay, skills, thread_context
from swell.engine.agent.agents import (
    base_protocol,
    choose_adapter,
    choose_model,
    make_adapter,
    merged_permissions,
    permission_warnings,
    permissions,
    swell_bin,
    system_prompt,
    visit_env,
)
from swell.engine.loop import cost
from swell.engine.loop.retry import max_attempts, retry_of
from swell.engine.steps.base import StepKind
from swell.engine.visit.context import StepResult, VisitContext
from swell.engine.visit.execute import INJECTED_DIR
from swell.engine.visit.handover import attempt_context, requirements, rework_header
from swell.engine.visit.inputs import ARTIFACTS_DIR, prepare
from swell.engine.visit.output_context import output_namespace
from swell.errors import TRANSIENT_KINDS, Problem, RateLimited
from swell.events import models as ev
from swell.manifest.lint_context import LintScope
from swell.manifest.models import ArtifactDef
from swell.manifest.suggest import unknown
from swell.manifest.template_names import FORGE_TYPES
from swell.relay.settings import RelaySettings, relay_settings
from swell.templates.render import render_text, unset_warnings
from swell.threads.fidelity import with_context
from swell.workspace import artifacts, safe
from swell.workspace.offload import off_loop

INLINE_LIMIT = 20_000  # characters of an input artifact put into a tool-less agent's prompt
PROMPT_CAP = 200_000  # characters of a prompt (and of a system prompt) kept in its event


def task_prompt(
    ctx: VisitContext, has_tools: bool = True, raw: bool = False
) -> tuple[str, list[str]]:
    """The step's prompt; `raw` (an adapter whose prompt is data) gets its rendered
    source alone."""
    exec_ = ctx.step.exec
    if exec_ is None:
        return "", []
    source = exec_.source
    if exec_.type == "slash_command" and exec_.command:
        source = slash_prompt(exec_.command, exec_.args or "")
    if exec_.source_path:
        source = safe.read_project_text(ctx.plan.project.root / exec_.source_path)
    rendered = render_text(source or "", ctx.namespace)
    if raw:
        return rendered.text, rendered.missing
    sections = artifact_sections(ctx, has_tools) + requirements(ctx)
    return follow_up(ctx) + rendered.text + sections, rendered.missing


def slash_prompt(command: str, args: str) -> str:
    """`exec.type: slash_command` as Wave words it: the agent is asked to run the
    command (a skill or a `.claude/commands` entry) with the rendered `args`."""
    command = command if command.startswith("/") else f"/{command}"
    return f"Run `{command}` with: {args}" if args else f"Run `{command}`"


def follow_up(ctx: VisitContext) -> str:
    """What a rework or retry visit is told first: the failure it must address."""
    reason = ctx.activation.reason
    if reason == "rework" and ctx.step.id in ctx.state.reworks:
        request = ctx.state.reworks[ctx.step.id]
        copy = None
        feedback = _feedback(request.feedback_path)
        if feedback is not None:
            # swell's place, and the two names Wave's prompts read it by
            for rel in (
                f"{INJECTED_DIR}/review-feedback.json",
                f"{ARTIFACTS_DIR}/review_feedback.json",
                f"{ARTIFACTS_DIR}/review_feedback_{request.for_step}.json",
            ):
                try:
                    target = safe.place(ctx.workspace.path, rel)
                    safe.replace(target, feedback)
                except safe.UnsafePath:
                    continue  # the header below still holds the review
                copy = copy or os.path.relpath(target, ctx.workspace.path)
        return rework_header(request, copy)
    retry = retry_of(ctx.state, ctx.step.id, ctx.activation)
    return "" if retry is None else attempt_context(ctx.plan.run_dir, retry)


MAX_FEEDBACK = 10 * 1024 * 1024


def _feedback(path: str | None) -> bytes | None:
    """The review feedback swell wrote in the run directory, if it is still a regular
    file there (a step can reach the run directory)."""
    try:
        return safe.read_limited(Path(path), MAX_FEEDBACK) if path else None
    except (OSError, safe.UnsafePath):
        return None


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
                f"- {ref.as_ or ref.artifact}: `{rel}` (artifact '{ref.artifact}' of "
                + (f"pipeline '{ref.pipeline}')" if ref.pipeline else f"step '{ref.step}')")
            )
            if not has_tools:
                try:  # a character is at most 4 bytes of UTF-8
                    raw = safe.read_capped(Path(path), INLINE_LIMIT * 4 + 4)
                except (OSError, safe.UnsafePath) as exc:
                    raw = f"(not readable: {exc})".encode()
                text = raw.decode("utf-8", errors="replace")
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
        if any((a.type or "").lower() == "json" for a in files):
            lines.append(
                "A json file holds only a JSON document: no Markdown, no prose, no code fences."
            )
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


async def agent_artifacts(ctx: VisitContext, result: AgentResult) -> list[ev.BaseEvent]:
    """Files the adapter names as artifacts (a browser's screenshots), recorded as
    declared outputs are: read only as regular files inside the workspace."""
    if not result.artifacts:
        return []
    defs = [ArtifactDef(name=a.name, path=a.path, type=a.type) for a in result.artifacts]
    found, problems = await off_loop(lambda: artifacts.collect(ctx.workspace.path, defs, None))
    return [ctx.event(e) for e in [*found, *(ev.Warning(message=p) for p in problems)]]


class Prompt(StepKind):
    name = "prompt"
    retries = "own"
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
    if step.exec and step.exec.type == "slash_command":
        if step.exec.command:
            return []
        return [scope.problem(("exec",), "exec.type: slash_command needs exec.command")]
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
    """An unknown adapter, or permission entries the adapter cannot enforce."""
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
    warn = scope.lint.permission_warnings
    if warn is None:
        return []
    allowed, denied = merged_permissions(step, persona, config)
    messages = warn(kind, adapter, dict(config.options) if config else {}, allowed, denied)
    return [
        scope.problem(("persona",), f"{message}; the run will record this", severity="warning")
        for message in messages
    ]


def _prompt_event(prompt: str, system: str | None) -> ev.PromptRendered:
    """The prompt as sent, kept for `swell serve`'s visit page (cut to PROMPT_CAP)."""
    cut = len(prompt) > PROMPT_CAP or len(system or "") > PROMPT_CAP
    return ev.PromptRendered(
        prompt=prompt[:PROMPT_CAP],
        system_prompt=system[:PROMPT_CAP] if system else None,
        truncated=cut,
    )


def _skills_and_hint(ctx: VisitContext, adapter: str, caps: Capabilities) -> tuple[str, list[str]]:
    """Give the agent its skills (engine/agent/skills.py) and, for an agent that can spawn
    sub-agents, Wave's `max_concurrent_agents` hint: what to add to its system prompt,
    and warnings (an adapter without skills)."""
    plan = ctx.plan
    names = skills.wanted(plan.project, plan.pipeline, ctx.step, ctx.namespace)
    extra = skills.concurrency_hint(ctx.step.max_concurrent_agents) if caps.subagents else ""
    if names and not caps.skills_dir:
        listed = ", ".join(names)
        return extra, [f"adapter '{adapter}' does not support skills; not given: {listed}"]
    given = skills.provide(plan.project.root, ctx.workspace.path, names, caps.skills_dir)
    return skills.section(given, caps.skills_dir) + extra, []


async def _attempts(
    ctx: VisitContext, adapter: AgentAdapter, request: AgentRequest, settings: RelaySettings | None
) -> relay.Relayed:
    """Run the agent, again after a pause while it fails for a passing reason (rate
    limit, timeout) and the step's retry policy allows."""
    run = await relay.run(ctx, adapter, request, settings)
    attempt, limit = 1, max_attempts(ctx.step.retry)
    while (
        run.result is not None
        and not run.result.success
        and run.result.error_kind in TRANSIENT_KINDS
        and attempt < limit
    ):
        attempt += 1
        delay = ctx.retry_delay(attempt)
        message = f"{run.result.error_kind}: retrying in {delay:g}s (attempt {attempt}): {run.result.error}"
        ctx.emit([ctx.event(ev.Warning(message=message))])
        await asyncio.sleep(delay)
        run = await relay.run(ctx, adapter, request, settings)
    return run


async def _visit(ctx: VisitContext) -> StepResult:
    project = ctx.plan.project
    persona = project.manifest.personas.get(ctx.step.persona or "")
    if ctx.step.persona and persona is None:  # a templated name rendered to no persona
        known = ", ".join(sorted(project.manifest.personas))
        return StepResult(
            outcome="failure", error=f"unknown persona '{ctx.step.persona}' (known: {known})"
        )
    inputs = prepare(ctx)  # before the prompt is rendered: it adds `deps.*`
    if inputs.problems:
        return StepResult(outcome="failure", error="; ".join(inputs.problems), events=inputs.events)
    ctx.emit(inputs.events)
    try:
        adapter_name = choose_adapter(ctx, persona)
        adapter = make_adapter(ctx, adapter_name)
        raw = adapter.capabilities.raw_prompt
        task, missing = task_prompt(ctx, has_tools=adapter.capabilities.tools, raw=raw)
        allowed, denied = permissions(ctx, persona, adapter_name)
        model = choose_model(ctx, persona, adapter_name)
        own = system_prompt(project.root, persona, ctx.step.persona)
        # the protocol names the run (`Run-ID: {{ run.id }}` trailers)
        protocol = render_text(base_protocol(project.root), ctx.namespace).text
        system = "\n\n".join(filter(None, [protocol, own]))
    except (OSError, ValueError) as exc:
        return StepResult(outcome="failure", error=str(exc))

    warnings = unset_warnings(missing)
    extra, skill_warning = _skills_and_hint(ctx, adapter_name, adapter.capabilities)
    system += extra
    warnings += skill_warning
    warnings += permission_warnings(ctx, adapter_name, allowed, denied)
    thread = await thread_context.prepare(ctx, adapter_name, adapter)
    ctx.emit([ctx.event(e) for e in [*(ev.Warning(message=w) for w in warnings), *thread.events]])

    env = {**ctx.swell_env(), "SWELL_BIN": swell_bin()}
    if ctx.step.thread:
        env["SWELL_THREAD"] = ctx.step.thread
    request = AgentRequest(
        prompt=task if raw else with_context(thread.preamble, task),
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
    ctx.emit([ctx.event(_prompt_event(request.prompt, system))])
    settings, problem = relay_settings(project.manifest, ctx.step, model)
    if problem and not raw:  # an adapter whose prompt is data has no context to relay
        ctx.emit([ctx.event(ev.Warning(message=problem))])
    run = await _attempts(ctx, adapter, request, settings)
    for name in project.manifest.runtime.fallbacks.get(adapter_name, []):
        if run.result is None or run.result.error_kind != RateLimited.kind:
            break
        try:
            adapter, model = make_adapter(ctx, name), choose_model(ctx, persona, name)
        except (OSError, ValueError) as exc:
            ctx.emit([ctx.event(ev.Warning(message=f"fallback adapter '{name}': {exc}"))])
            continue
        note = f"adapter '{adapter_name}' is rate-limited; falling back to '{name}' (runtime.fallbacks)"
        ctx.emit([ctx.event(ev.Warning(message=note))])
        adapter_name = name
        # a fresh agent of another kind: no session of the first to resume
        request = request.model_copy(
            update={"model": model, "resume_session": None, "env": visit_env(ctx, adapter, env)}
        )
        settings, _ = relay_settings(project.manifest, ctx.step, model)
        run = await _attempts(ctx, adapter, request, settings)
    result = run.result
    if run.error or result is None:
        return StepResult(
            outcome="failure",
            tokens_in=run.tokens_in,
            tokens_out=run.tokens_out,
            cost_usd=cost.estimate(model, run.tokens_in, run.tokens_out),
            adapter=adapter_name,
            model=model,
            error=run.error or f"adapter '{adapter_name}' ended without a result",
        )
    ok = result.success
    outcome: ev.Outcome = "success" if ok else "failure"
    if ok and result.text:
        answer_to_outputs(ctx, result.text)
    tokens_in = result.usage.input_tokens + result.usage.cache_read_tokens + run.tokens_in
    tokens_out = result.usage.output_tokens + run.tokens_out
    return StepResult(
        outcome=outcome,
        error=None if ok else f"{result.error_kind or 'agent'}: {result.error or 'failed'}",
        exit_code=0 if ok else 1,
        output_tail=result.text[-4000:] if result.text else None,
        outputs=output_namespace(result.text, "", 0 if ok else 1, outcome),
        stdout=result.text,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost_usd=cost.visit_cost(model, tokens_in, tokens_out, result.usage.cost_usd),
        adapter=adapter_name,
        model=model,
        events=await agent_artifacts(ctx, result),
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
