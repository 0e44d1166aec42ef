"""`runtime.retros`: the narrated retro kept after each run.

A retro's numbers are computed from the store whenever they are asked for
(`swell retro RUN`, the dashboard), so every run has one without anything written at
its end. What a run's end adds is the narrative: with `narrate: true`, an observer on
the event bus, after the store, computes the retro when a run this process executes
ends (`run.finished`), has the narrator write its narrative and keeps it in
`<state dir>/retros/<run id>.json`. `enabled: false` turns it off. Keeping it never
fails the run: a retro that cannot be computed or written is a warning on stderr.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from swell.errors import SwellError
from swell.events import models as ev
from swell.retro.models import Retro
from swell.retro.run import build_retro
from swell.store.protocols import RunReader

if TYPE_CHECKING:
    from swell.runtime import Runtime

Narrator = Callable[[Retro], tuple[str, str]]  # -> (narrative, who wrote it)


def retro_path(state_dir: Path, run_id: str) -> Path:
    return state_dir / "retros" / f"{run_id}.json"


def stored_retro(state_dir: Path, run_id: str) -> Retro | None:
    """The retro kept when run `run_id` ended, if one was (and still reads)."""
    try:
        return Retro.model_validate_json(retro_path(state_dir, run_id).read_bytes())
    except (OSError, ValidationError):
        return None


def save_retro(state_dir: Path, retro: Retro) -> Path:
    """Write the retro atomically (a reader never sees half of one)."""
    path = retro_path(state_dir, retro.run_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(retro.model_dump_json(indent=2), encoding="utf-8")
    os.replace(part, path)
    return path


class RetroRecorder:
    """Keeps a retro of every run that ends while this process executes it."""

    def __init__(self, store: RunReader, state_dir: Path, narrator: Narrator | None) -> None:
        self.store, self.state_dir, self.narrator = store, state_dir, narrator

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        for event in events:
            if isinstance(event, ev.RunFinished):
                self.record(event.run_id)

    def record(self, run_id: str) -> None:
        try:
            retro = build_retro(self.store, run_id)
            if self.narrator is not None:
                self._narrate(retro)
            save_retro(self.state_dir, retro)
        except (SwellError, OSError) as exc:
            print(f"warning: no retro kept for run {run_id}: {exc}", file=sys.stderr)

    def _narrate(self, retro: Retro) -> None:
        # the run loop is an asyncio loop: the narrator runs its own, in a thread
        assert self.narrator is not None
        found: list[tuple[str, str]] = []
        failed: list[Exception] = []

        def work() -> None:
            try:
                found.append(self.narrator(retro))  # type: ignore[misc]
            except SwellError as exc:
                failed.append(exc)

        thread = threading.Thread(target=work, name="retro-narrator", daemon=True)
        thread.start()
        thread.join()
        if failed:
            print(f"warning: run {retro.run_id}: {failed[0]}", file=sys.stderr)
        elif found:
            retro.narrative, retro.narrator = found[0]


def retro_observers(rt: Runtime) -> list[RetroRecorder]:
    """The observer `runtime.retros` asks for: one with `narrate: true` (and not
    `enabled: false`), else none."""
    config = rt.project.manifest.runtime.retros
    if config.enabled is False or not config.narrate:
        return []
    persona = rt.project.manifest.runtime.relay.summarizer_persona

    def narrator(retro: Retro) -> tuple[str, str]:
        from swell.retro.narrate import narrate

        text = narrate(
            retro,
            rt.project.manifest,
            rt.project.root,
            rt.registries.adapters,
            persona,
            config.narrate_model,
        )
        return text, persona or "built-in summarizer"

    return [RetroRecorder(rt.store, rt.state_dir, narrator)]
