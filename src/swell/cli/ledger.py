"""What `swell status` shows of a run's spend (the cost ledger) and of its pipeline
outputs; read from the store alone, so it works when the project files are broken."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from swell.engine.visit.pipeline_outputs import RunOutput
    from swell.store.protocols import Store
    from swell.store.rows import ReviewRow, StepRow


def run_cost(steps: list[StepRow], reviews: list[ReviewRow]) -> float:
    """The run's total: its visits' costs and its reviews'."""
    return round(sum(s.cost_usd for s in steps) + sum(r.cost_usd for r in reviews), 6)


def money(amount: float) -> str:
    return f"${amount:.4f}"


def step_note(step: StepRow) -> str:
    """A step line's tail: what its visits cost and the model its last one ran on."""
    parts = [money(step.cost_usd)] if step.cost_usd else []
    if step.last_model:
        parts.append(step.last_model)
    return ("  " + "  ".join(parts)) if parts else ""


def outputs_of(store: Store, run_id: str, pipeline_text: str | None) -> dict[str, RunOutput]:
    """The run's `pipeline_outputs`; a pipeline that declares none (most) costs nothing:
    `swell status` must stay quick."""
    if not pipeline_text or "pipeline_outputs" not in pipeline_text:
        return {}
    from swell.engine.visit.pipeline_outputs import run_outputs

    return run_outputs(store, run_id)


def outcomes_of(store: Store, run_id: str, pipeline_text: str | None) -> list[dict[str, Any]]:
    """The outcomes the run's steps recorded (`outcome.recorded`); none to read when the
    pipeline declares no `outcomes`."""
    if not pipeline_text or "outcomes" not in pipeline_text:
        return []
    from swell.events import models as ev

    return [
        {"step_id": e.step_id, "visit": e.visit, "type": e.kind, "label": e.label,
         "value": e.value, "description": e.description}
        for e in store.events_of_kind(run_id, ["outcome.recorded"])
        if isinstance(e, ev.OutcomeRecorded)
    ]  # fmt: skip


def outputs_json(outputs: dict[str, RunOutput]) -> dict[str, dict[str, Any]]:
    return {name: out.as_dict() for name, out in outputs.items()}


def print_outputs(outputs: dict[str, RunOutput]) -> None:
    if not outputs:
        return
    _say("\npipeline outputs")
    for name, out in outputs.items():
        kind = f" ({out.type})" if out.type else ""
        source = f"step {out.step}, artifact {out.artifact}"
        if not out.found:
            _say(f"  {name}{kind}: not produced ({source})")
            continue
        value = f" = {out.value}" if out.field else ""
        _say(f"  {name}{kind}: {out.path}{value}   ({source})")


def _say(text: str) -> None:
    from swell.cli.render import for_terminal

    print(for_terminal(text))  # an output's path and value come from what a step wrote


__all__ = ["money", "outputs_json", "outputs_of", "print_outputs", "run_cost", "step_note"]
