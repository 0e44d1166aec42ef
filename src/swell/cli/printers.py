"""`swell run -v`: progress lines, plus a line for every other event."""

from __future__ import annotations

from typing import TYPE_CHECKING

from swell.cli.render import ProgressPrinter
from swell.events import models as ev

if TYPE_CHECKING:
    from swell.events.views import EventView

FIELD_CHARS = 160  # of one field's value


class VerbosePrinter(ProgressPrinter):
    """What `ProgressPrinter` shows, and every event it leaves out as `type step: fields`
    (agent text, usage, thread context, artifacts, queued steps, ...)."""

    def line(self, e: ev.BaseEvent | EventView) -> str | None:
        shown = super().line(e)
        if shown is not None:
            return shown
        assert isinstance(e, ev.BaseEvent)  # `swell run -v` prints a run's own events
        kind = str(getattr(e, "type", type(e).__name__))
        where = ""
        if e.step_id:
            where = f" {e.step_id}" + (f" #{e.visit}" if e.visit and e.visit > 1 else "")
        fields = e.model_dump(exclude={*ev.BaseEvent.model_fields, "type"}, exclude_defaults=True)
        parts = []
        for key, value in fields.items():
            text = " ".join(str(value).split())
            if len(text) > FIELD_CHARS:
                text = text[: FIELD_CHARS - 1] + "…"
            parts.append(f"{key}={text}")
        return self._c(f"    · {kind}{where}" + (f"  {' '.join(parts)}" if parts else ""), "2")
