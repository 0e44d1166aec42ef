"""Every event kind's fields, in order, with their defaults: what a stored event
(`event_data`: its fields minus the envelope and minus defaults) lacks. Lets a reader
(`swell logs`) rebuild an event without importing pydantic (events/views.py).

Generated from events/models.py by scripts/event_shapes.py; do not edit by hand.
"""

from __future__ import annotations

REQUIRED = ...  # a field without a default: always stored

# event type -> ((field, default), ...), envelope left out
FIELDS: dict[str, tuple[tuple[str, object], ...]] = {
    "agent.session": (("session_id", REQUIRED),),
    "agent.text": (("text", REQUIRED),),
    "agent.tool_call": (
        ("name", REQUIRED),
        ("target", None),
        ("call_id", None),
    ),
    "agent.tool_result": (
        ("call_id", REQUIRED),
        ("name", REQUIRED),
        ("output", ""),
        ("is_error", False),
        ("duration_ms", None),
        ("truncated", 0),
    ),
    "agent.usage": (
        ("input_tokens", 0),
        ("output_tokens", 0),
        ("cache_read_tokens", 0),
        ("cache_write_tokens", 0),
        ("cost_usd", None),
    ),
    "artifact.written": (
        ("name", REQUIRED),
        ("path", REQUIRED),
        ("sha256", REQUIRED),
        ("size", REQUIRED),
        ("artifact_type", None),
    ),
    "breaker.tripped": (
        ("error_key", REQUIRED),
        ("count", REQUIRED),
    ),
    "budget.exceeded": (
        ("spent_usd", REQUIRED),
        ("ceiling", REQUIRED),
        ("message", ""),
    ),
    "budget.warning": (
        ("spent_usd", REQUIRED),
        ("warn_at", REQUIRED),
        ("message", ""),
    ),
    "child.started": (
        ("child_run_id", REQUIRED),
        ("pipeline", REQUIRED),
        ("item", None),
    ),
    "context.set": (
        ("key", REQUIRED),
        ("value", REQUIRED),
    ),
    "contract.failed": (
        ("index", REQUIRED),
        ("contract_type", REQUIRED),
        ("policy", REQUIRED),
        ("error", REQUIRED),
        ("verdict", None),
        ("for_step", None),
    ),
    "contract.passed": (
        ("index", REQUIRED),
        ("contract_type", REQUIRED),
        ("note", None),
        ("for_step", None),
    ),
    "failure.absorbed": (
        ("policy", REQUIRED),
        ("error", REQUIRED),
        ("fails_run", False),
    ),
    "gate.resolved": (
        ("decision", REQUIRED),
        ("choice", None),
        ("target", None),
        ("reason", None),
        ("by", None),
    ),
    "gate.waiting": (
        ("gate_type", REQUIRED),
        ("message", ""),
        ("choices", []),
        ("deadline", None),
        ("default", None),
    ),
    "limit.exceeded": (
        ("limit", REQUIRED),
        ("count", REQUIRED),
        ("maximum", REQUIRED),
    ),
    "outcome.recorded": (
        ("kind", REQUIRED),
        ("label", REQUIRED),
        ("value", REQUIRED),
        ("description", ""),
    ),
    "prompt.rendered": (
        ("prompt", REQUIRED),
        ("system_prompt", None),
        ("truncated", False),
    ),
    "relay.checkpoint": (
        ("relay", REQUIRED),
        ("path", REQUIRED),
        ("size", REQUIRED),
        ("history_chars", REQUIRED),
        ("summarizer", REQUIRED),
    ),
    "relay.resumed": (
        ("relay", REQUIRED),
        ("prompt_chars", REQUIRED),
    ),
    "relay.triggered": (
        ("relay", REQUIRED),
        ("tokens", REQUIRED),
        ("threshold", REQUIRED),
        ("window", REQUIRED),
        ("session_id", None),
    ),
    "retry.requested": (
        ("attempt", REQUIRED),
        ("max_attempts", REQUIRED),
        ("reason", REQUIRED),
        ("delay_ms", 0),
    ),
    "review.completed": (
        ("index", REQUIRED),
        ("reviewer", REQUIRED),
        ("adapter", None),
        ("model", None),
        ("verdict", None),
        ("issues", []),
        ("suggestions", []),
        ("confidence", None),
        ("summary", None),
        ("error", None),
        ("tokens_in", 0),
        ("tokens_out", 0),
        ("cost_usd", 0.0),
        ("duration_ms", 0),
        ("for_step", None),
    ),
    "review.started": (
        ("index", REQUIRED),
        ("reviewer", REQUIRED),
    ),
    "rework.requested": (
        ("for_step", REQUIRED),
        ("for_visit", REQUIRED),
        ("contract_type", REQUIRED),
        ("reason", REQUIRED),
        ("reviewer", None),
        ("feedback_path", None),
        ("feedback", None),
    ),
    "round.recorded": (
        ("round", REQUIRED),
        ("thread", None),
        ("thread_round", None),
        ("role", REQUIRED),
        ("persona", None),
        ("content", ""),
        ("metadata", {}),
    ),
    "route.taken": (
        ("target", REQUIRED),
        ("condition", None),
        ("outcome", REQUIRED),
    ),
    "run.finished": (
        ("status", REQUIRED),
        ("error", None),
        ("visits", 0),
        ("duration_ms", 0),
    ),
    "run.fork_made": (
        ("fork_run_id", REQUIRED),
        ("at_step", REQUIRED),
        ("at_visit", REQUIRED),
    ),
    "run.forked": (
        ("origin_run_id", REQUIRED),
        ("at_step", REQUIRED),
        ("at_visit", REQUIRED),
        ("checkpoint", None),
        ("origin_seq", 0),
    ),
    "run.resumed": (("interrupted_steps", []),),
    "run.rewound": (
        ("at_step", REQUIRED),
        ("at_visit", REQUIRED),
        ("kept_seq", REQUIRED),
        ("checkpoint", None),
        ("abandoned", []),
        ("context", None),
    ),
    "run.started": (
        ("pipeline", REQUIRED),
        ("input", ""),
        ("parent_run_id", None),
        ("parent_step_id", None),
        ("workspace", ""),
    ),
    "run.waiting": (("gates", []),),
    "sandbox.connection": (
        ("host", REQUIRED),
        ("port", REQUIRED),
        ("allowed", REQUIRED),
    ),
    "step.finished": (
        ("outcome", REQUIRED),
        ("error", None),
        ("error_key", None),
        ("exit_code", None),
        ("duration_ms", 0),
        ("output_tail", None),
        ("tokens_in", 0),
        ("tokens_out", 0),
        ("cost_usd", 0.0),
        ("optional_failure", False),
        ("adapter", None),
        ("model", None),
    ),
    "step.interrupted": (("reason", REQUIRED),),
    "step.queued": (
        ("reason", REQUIRED),
        ("source_step", None),
        ("source_visit", None),
    ),
    "step.started": (
        ("kind", REQUIRED),
        ("progress", "line"),
        ("persona", None),
        ("adapter", None),
        ("model", None),
        ("detail", None),
        ("source_step", None),
        ("source_visit", None),
    ),
    "thread.context": (
        ("thread", REQUIRED),
        ("fidelity", REQUIRED),
        ("requested", REQUIRED),
        ("native_resume", False),
        ("session_id", None),
        ("rounds", 0),
        ("chars", 0),
    ),
    "thread.summarized": (
        ("thread", REQUIRED),
        ("upto_round", REQUIRED),
        ("text", REQUIRED),
        ("persona", None),
    ),
    "warning": (("message", REQUIRED),),
    "workspace.checkpoint": (
        ("commit", REQUIRED),
        ("tree", REQUIRED),
        ("parent", None),
        ("changed", True),
        ("workspace", ""),
        ("remote", None),
    ),
}

# (event type or model, field) -> the model its value (or items) has
NESTED: dict[tuple[str, str], str] = {
    ("ReviewFeedback", "issues"): "ReviewIssue",
    ("gate.waiting", "choices"): "GateChoiceInfo",
    ("review.completed", "issues"): "ReviewIssue",
    ("rework.requested", "feedback"): "ReviewFeedback",
}

# model -> ((field, default), ...)
MODELS: dict[str, tuple[tuple[str, object], ...]] = {
    "GateChoiceInfo": (
        ("key", REQUIRED),
        ("label", REQUIRED),
        ("target", None),
    ),
    "ReviewFeedback": (
        ("verdict", REQUIRED),
        ("issues", []),
        ("suggestions", []),
        ("confidence", REQUIRED),
        ("summary", REQUIRED),
    ),
    "ReviewIssue": (
        ("severity", REQUIRED),
        ("file", None),
        ("line", None),
        ("detail", REQUIRED),
    ),
}
