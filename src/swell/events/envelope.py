"""The envelope every event carries (`BaseEvent`) and the mark of free text
(`FreeText`), apart so that event modules other than events/models.py can define
kinds of the `Event` union."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict


class _FreeText:
    """Marks a field whose strings are free text (see `FreeText`)."""

    def __repr__(self) -> str:
        return "FREE_TEXT"


FREE_TEXT = _FreeText()
# Text people and programs wrote (output, errors, prompts, messages, a tool's input):
# the only fields secrets are masked in (events/redact.py). Everything else is an
# identifier, a key, a path or a number, which masking would corrupt (a run id ending
# in `...task-2026...` once lost its events to an `sk-` key shape), so it is never
# touched. On a dict, the marker covers its values, never its keys.
FreeText = Annotated[str, FREE_TEXT]


class BaseEvent(BaseModel):
    """The envelope every event carries."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    run_id: str = ""
    seq: int = 0
    ts: str = ""
    step_id: str | None = None
    visit: int | None = None
