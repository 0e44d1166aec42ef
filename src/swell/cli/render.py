"""How runs look in a terminal: progress lines, NDJSON, and shared formatting."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from swell.events.views import BIDI_CONTROLS

if TYPE_CHECKING:  # `swell logs` prints views of stored events, without pydantic
    from swell.events import models as ev
    from swell.events.views import EventView

SYMBOLS = {"success": "✓", "failure": "✗"}
ANSWER_LINES = 6  # of an agent's final answer shown under its step


# What a terminal would act on in text swell prints: an SGR (colour) sequence, or a
# control character (ESC starting any other sequence, BEL, CR, backspace, C1's CSI);
# and the Unicode bidirectional overrides and isolates (events.views.BIDI_CONTROLS).
_BIDI = BIDI_CONTROLS
_CONTROLS = re.compile(rf"(\x1b\[[0-9;:]*m)|[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}]")
_OWN_COLOURS = re.compile(r"\x1b\[(?:0|2|3[1236])m")  # the colours ProgressPrinter uses
_C1 = re.compile(rf"[\x80-\x9f{_BIDI}]")


def for_terminal(text: str, colours: bool = False) -> str:
    """`text` as swell prints it to a terminal. Agents, steps and files write what
    they like, and a terminal acts on escape sequences (a window title, a screen clear,
    a hidden link, a cursor move that overwrites what swell printed): every control
    character is shown as `\\xNN` instead, except newlines and tabs. Colour sequences are
    dropped, or kept with `colours` when they are the plain ones swell prints itself.
    What is stored stays as it was."""

    def shown(match: re.Match[str]) -> str:
        sgr = match.group(1)
        if sgr is not None:
            return sgr if colours and _OWN_COLOURS.fullmatch(sgr) else ""
        code = ord(match.group())
        return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"

    return _CONTROLS.sub(shown, text.replace("\r\n", "\n"))


def json_for_terminal(line: str) -> str:
    """A JSON line with its C1 control characters and bidi overrides escaped as
    `\\uNNNN` (JSON escapes the others already): the same value, nothing a terminal
    acts on or reorders."""
    return _C1.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


def fmt_ms(ms: int | None) -> str:
    if ms is None:
        return "-"
    if ms < 1000:
        return f"{ms}ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s"


class NdjsonPrinter:
    """`-o json`: one event per line, flushed as it happens."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        from swell.events.models import event_json

        for event in events:
            self.out.write(json_for_terminal(event_json(event)) + "\n")
        self.out.flush()


class ProgressPrinter:
    """Readable progress lines; colour when writing to a terminal. Prints events or
    views of stored ones (`events.views`): it reads their fields only."""

    def __init__(
        self, out: TextIO | None = None, color: bool | None = None, root_run: str | None = None
    ) -> None:
        self.out = out or sys.stdout
        self.color = self.out.isatty() if color is None else color
        self.root_run = root_run
        self._progress: dict[str | None, ev.Progress] = {}  # step id -> how it shows

    def _c(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def _write(self, line: str, run_id: str) -> None:
        indent = "  " if self.root_run and run_id != self.root_run else ""
        self.out.write(indent + for_terminal(line, self.color) + "\n")

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        for event in events:
            line = self.line(event)
            if line:
                self._write(line, event.run_id)
        self.out.flush()

    def line(self, e: ev.BaseEvent | EventView) -> str | None:
        """The line an event shows as, or None: looked up by its type (most events of a
        run, `step.queued` or `round.recorded`, show nothing)."""
        show = _LINES.get(getattr(e, "type", ""))
        return None if show is None else show(self, e)

    def _name(self, e: Any) -> str:
        return f"{e.step_id}" + (f" #{e.visit}" if e.visit and e.visit > 1 else "")

    def _run_started(self, e: ev.RunStarted) -> str | None:
        if e.parent_run_id:
            return self._c(f"↳ sub-pipeline {e.pipeline} ({e.run_id})", "2")
        return None

    def _run_resumed(self, e: ev.RunResumed) -> str | None:
        extra = f" (re-running {', '.join(e.interrupted_steps)})" if e.interrupted_steps else ""
        return self._c(f"resumed {e.run_id}{extra}", "2")

    def _run_forked(self, e: ev.RunForked) -> str | None:
        return self._c(f"forked from {e.origin_run_id} at {e.at_step}#{e.at_visit}", "2")

    def _run_rewound(self, e: ev.RunRewound) -> str | None:
        return self._c(f"rewound to {e.at_step}#{e.at_visit} (later visits abandoned)", "2")

    def _step_started(self, e: ev.StepStarted) -> str | None:
        self._progress[e.step_id] = e.progress
        if e.progress == "hidden":
            return None
        detail = f"  {self._c(e.detail, '2')}" if e.detail else ""
        return f"{self._c('▶', '36')} {self._name(e)}{detail}"

    def _step_finished(self, e: ev.StepFinished) -> str | None:
        shows = self._progress.get(e.step_id, "line")
        if shows == "hidden":
            return None
        ok = e.outcome == "success"
        mark = self._c(SYMBOLS[e.outcome], "32" if ok else "31")
        extra = "" if e.exit_code in (None, 0) else f"  exit {e.exit_code}"
        tokens = f"  {e.tokens_in}→{e.tokens_out} tok" if e.tokens_in or e.tokens_out else ""
        text = f"{mark} {self._name(e)}  {fmt_ms(e.duration_ms)}{extra}{tokens}"
        if ok and shows == "answer" and e.output_tail:
            answer = [ln for ln in e.output_tail.strip().splitlines() if ln.strip()]
            more = (
                [f"… ({len(answer) - ANSWER_LINES} more lines)"]
                if len(answer) > ANSWER_LINES
                else []
            )
            text += "".join(
                f"\n    {self._c(ln[:160], '2')}" for ln in answer[:ANSWER_LINES] + more
            )
        if not ok and e.error:
            lines = [ln for ln in e.error.strip().splitlines() if ln.strip()]
            if lines and lines[0].startswith("exit code"):
                lines = lines[1:]  # the exit code is already on the line above
            last = lines[-3:]
            text += "".join(f"\n    {self._c(ln, '2')}" for ln in last)
        return text

    def _route_taken(self, e: ev.RouteTaken) -> str | None:
        cond = f" ({e.condition})" if e.condition else ""
        return self._c(f"  → {e.target}{cond}", "2")

    def _context_set(self, e: ev.ContextSet) -> str | None:
        return self._c(f"  context.{e.key} = {e.value}", "2")

    def _gate_waiting(self, e: ev.GateWaiting) -> str | None:
        lines = [self._c(f"⏸ {e.step_id}: {e.message}", "33")]
        if e.choices:
            lines.append("    choices: " + ", ".join(f"[{c.key}] {c.label}" for c in e.choices))
        lines.append(
            self._c(
                f"    approve: swell approve {e.run_id} {e.step_id}"
                + (" --choice KEY" if e.choices else "")
                + f"   reject: swell reject {e.run_id} {e.step_id} --reason TEXT",
                "2",
            )
        )
        return "\n".join(lines)

    def _gate_resolved(self, e: ev.GateResolved) -> str | None:
        who = f" by {e.by}" if e.by else ""
        choice = f" ({e.choice})" if e.choice else ""
        return self._c(f"  gate {e.step_id} {e.decision}{choice}{who}", "33")

    def _contract_passed(self, e: ev.ContractPassed) -> str | None:
        note = f" ({e.note})" if e.note else ""
        return self._c(f"  ✓ contract {e.index + 1} {e.contract_type}{note}", "32")

    def _contract_failed(self, e: ev.ContractFailed) -> str | None:
        return self._c(f"  ✗ contract {e.index + 1} {e.contract_type} → {e.policy}", "31")

    def _review_completed(self, e: ev.ReviewCompleted) -> str | None:
        verdict = e.verdict or f"no verdict ({e.error})"
        issues = f", {len(e.issues)} issue(s)" if e.issues else ""
        return self._c(
            f"  review by {e.reviewer}: {verdict}{issues}  {e.tokens_in}→{e.tokens_out} tok"
            + (f"  ${e.cost_usd:.4f}" if e.cost_usd else ""),
            "2",
        )

    def _rework_requested(self, e: ev.ReworkRequested) -> str | None:
        return self._c(f"  → rework by {e.step_id} (for {e.for_step})", "33")

    def _retry_requested(self, e: ev.RetryRequested) -> str | None:
        wait = f" in {fmt_ms(e.delay_ms)}" if e.delay_ms else ""
        return self._c(
            f"  → retry {e.step_id} (attempt {e.attempt} of {e.max_attempts}){wait}", "33"
        )

    def _limit_exceeded(self, e: ev.LimitExceeded) -> str | None:
        return self._c(f"! {e.limit} reached at {e.step_id}: {e.count} of {e.maximum}", "31")

    def _breaker_tripped(self, e: ev.BreakerTripped) -> str | None:
        return self._c(
            f"! circuit breaker tripped at {e.step_id} after {e.count} identical failures", "31"
        )

    def _warning(self, e: ev.Warning) -> str | None:
        return self._c(f"  warning: {e.message}", "33")

    def _sandbox_connection(self, e: ev.SandboxConnection) -> str | None:
        if e.allowed:
            return self._c(f"    · network {e.host}:{e.port}", "2")
        return self._c(f"  refused: {e.host}:{e.port} is not in allowed_domains", "33")

    def _budget_warning(self, e: ev.BudgetWarning) -> str | None:
        return self._c(f"  budget warning: {e.message}", "33")

    def _budget_exceeded(self, e: ev.BudgetExceeded) -> str | None:
        return self._c(f"! {e.message}", "31")

    def _agent_tool_call(self, e: ev.AgentToolCall) -> str | None:
        target = f" {e.target}" if e.target else ""
        return self._c(f"    · {e.name}{target}", "2")

    def _step_interrupted(self, e: ev.StepInterrupted) -> str | None:
        return self._c(f"■ {self._name(e)} interrupted: {e.reason}", "33")

    def _run_finished(self, e: ev.RunFinished) -> str | None:
        if self.root_run and e.run_id != self.root_run:
            return self._c(f"↲ sub-pipeline {e.status}", "2")
        colour = {"succeeded": "32", "failed": "31"}.get(e.status, "33")
        text = f"run {e.status} in {fmt_ms(e.duration_ms)} ({e.visits} visits)"
        if e.error and e.status != "succeeded":
            text += f": {e.error}"
        return self._c(text, colour)


# event type -> how ProgressPrinter shows it; every other type shows nothing
_LINES: dict[str, Callable[[ProgressPrinter, Any], str | None]] = {
    "run.started": ProgressPrinter._run_started,
    "run.resumed": ProgressPrinter._run_resumed,
    "run.forked": ProgressPrinter._run_forked,
    "run.rewound": ProgressPrinter._run_rewound,
    "step.started": ProgressPrinter._step_started,
    "step.finished": ProgressPrinter._step_finished,
    "route.taken": ProgressPrinter._route_taken,
    "context.set": ProgressPrinter._context_set,
    "gate.waiting": ProgressPrinter._gate_waiting,
    "gate.resolved": ProgressPrinter._gate_resolved,
    "contract.passed": ProgressPrinter._contract_passed,
    "contract.failed": ProgressPrinter._contract_failed,
    "review.completed": ProgressPrinter._review_completed,
    "rework.requested": ProgressPrinter._rework_requested,
    "retry.requested": ProgressPrinter._retry_requested,
    "limit.exceeded": ProgressPrinter._limit_exceeded,
    "breaker.tripped": ProgressPrinter._breaker_tripped,
    "warning": ProgressPrinter._warning,
    "sandbox.connection": ProgressPrinter._sandbox_connection,
    "budget.warning": ProgressPrinter._budget_warning,
    "budget.exceeded": ProgressPrinter._budget_exceeded,
    "agent.tool_call": ProgressPrinter._agent_tool_call,
    "step.interrupted": ProgressPrinter._step_interrupted,
    "run.finished": ProgressPrinter._run_finished,
}
