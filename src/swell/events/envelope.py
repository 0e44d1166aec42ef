"""The envelope every event carries (`BaseEvent`), apart so that event modules other
than events/models.py can define kinds of the `Event` union."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class BaseEvent(BaseModel):
    """The envelope every event carries."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    run_id: str = ""
    seq: int = 0
    ts: str = ""
    step_id: str | None = None
    visit: int | None = None
