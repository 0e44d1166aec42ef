"""Asking the person at this terminal to approve a gate, without blocking the run loop."""

from __future__ import annotations

import asyncio
import sys

from swell.engine.visit.context import GateDecision
from swell.manifest.models import Step


async def _read_line(prompt: str) -> str | None:
    """One line from stdin via the event loop (approvals from elsewhere still arrive)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[str | None] = loop.create_future()
    fd = sys.stdin.fileno()

    def ready() -> None:
        line = sys.stdin.readline()
        if not future.done():
            future.set_result(line.rstrip("\n") if line else None)

    sys.stdout.write(prompt)
    sys.stdout.flush()
    loop.add_reader(fd, ready)
    try:
        return await future
    finally:
        loop.remove_reader(fd)


class TerminalPrompter:
    """Asks on the terminal: a choice key, or y/n; Enter takes the gate's `default`
    choice (shown in the question); a rejection asks for a reason."""

    async def ask(self, run_id: str, step: Step, message: str) -> GateDecision | None:
        gate = step.gate
        keys = [c.key for c in gate.choices] if gate else []
        default = gate.default if gate and gate.default in keys else None
        hint = "/".join(keys) if keys else "y/n"
        takes = f"(Enter: {default}) " if default else ""
        while True:
            answer = await _read_line(f"  {step.id}: approve? [{hint}] {takes}")
            if answer is None:
                return None  # stdin closed; keep waiting for `swell approve`
            answer = answer.strip() or default or ""
            if keys and answer in keys:
                return GateDecision("approved", choice=answer, by="terminal")
            if answer.lower() in ("y", "yes", "a", "approve") and not keys:
                return GateDecision("approved", by="terminal")
            if answer.lower() in ("n", "no", "r", "reject"):
                reason = await _read_line("  reason: ")
                return GateDecision(
                    "rejected", reason=(reason or "").strip() or None, by="terminal"
                )
