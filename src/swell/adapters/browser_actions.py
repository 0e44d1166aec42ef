"""The browser adapter's input and output shapes: the action list a step's prompt holds,
the result of each action, and the pure rules (allow-list, truncation) they need.

No browser here: `browser.py` runs the actions. Field names follow Wave's browser
commands (`action, url, selector, value, format, timeout_ms, wait_for`); swell adds
`path` and `full_page` to screenshots (Wave has no way to write the image to a file).
"""

from __future__ import annotations

import json
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

ActionName = Literal["navigate", "screenshot", "get_text", "get_html", "click", "type"]

# what each action needs besides `action` (Wave's validateCommand)
REQUIRED: dict[str, tuple[str, ...]] = {
    "navigate": ("url",),
    "click": ("selector",),
    "type": ("selector", "value"),
}
# fields an action uses; anything else set on it is a mistake worth reporting
USES: dict[str, frozenset[str]] = {
    "navigate": frozenset({"url"}),
    "screenshot": frozenset({"format", "path", "full_page"}),
    "get_text": frozenset({"selector"}),
    "get_html": frozenset({"selector"}),
    "click": frozenset({"selector"}),
    "type": frozenset({"selector", "value"}),
}
COMMON = frozenset({"action", "timeout_ms", "wait_for"})


class Action(BaseModel):
    """One browser action of a step's prompt."""

    model_config = ConfigDict(extra="forbid")

    action: ActionName
    url: str | None = None
    selector: str | None = None
    value: str | None = None
    format: Literal["png", "jpeg"] | None = None
    path: str | None = None  # screenshot file, relative to the step's workspace
    full_page: bool | None = None
    timeout_ms: int | None = Field(default=None, gt=0, le=600_000)
    wait_for: str | None = None  # a CSS selector that must be visible first

    @model_validator(mode="after")
    def _fields_fit(self) -> Action:
        missing = [f for f in REQUIRED.get(self.action, ()) if getattr(self, f) in (None, "")]
        if self.action == "type" and self.value == "":
            missing.remove("value")  # typing "" clears the field: allowed
        if missing:
            raise ValueError(f"{self.action} needs {' and '.join(repr(f) for f in missing)}")
        stray = sorted(self.model_fields_set - COMMON - USES[self.action])
        if stray:
            raise ValueError(f"{self.action} does not use {', '.join(repr(f) for f in stray)}")
        return self

    def target(self) -> str | None:
        """What the action acts on, for progress lines and error messages."""
        return self.url or self.selector or self.path


_ACTIONS: TypeAdapter[list[Action]] = TypeAdapter(list[Action])


class ActionListError(ValueError):
    """The prompt is not a usable list of browser actions."""


def parse_actions(prompt: str) -> list[Action]:
    """The step's prompt as a list of actions, or an ActionListError saying what is wrong
    (which action, which field)."""
    text = prompt.strip()
    if not text:
        raise ActionListError("the prompt is empty; it must be a JSON list of browser actions")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ActionListError(
            f"the prompt is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "it must be a JSON list of browser actions"
        ) from None
    if not isinstance(data, list) or not data:
        raise ActionListError("the prompt must be a non-empty JSON list of browser actions")
    try:
        return _ACTIONS.validate_python(data)
    except ValidationError as exc:
        raise ActionListError(_describe(exc, data)) from None


def _describe(exc: ValidationError, data: list[Any]) -> str:
    """The first validation problem as `action N (name): what`, N counted from 1."""
    err = exc.errors()[0]
    loc = list(err["loc"])
    index = loc[0] if loc and isinstance(loc[0], int) else None
    if index is None:
        return err["msg"]
    item = data[index] if isinstance(data[index], dict) else {}
    name = item.get("action", "?")
    where = ".".join(str(p) for p in loc[1:])
    msg = str(err["msg"]).removeprefix("Value error, ")
    field = f"{where}: " if where else ""
    return f"action {index + 1} ({name}): {field}{msg}"


class ActionResult(BaseModel):
    """What one action did, as printed and written to the step's output artifact."""

    action: str
    status: Literal["success", "error"]
    data: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    duration_ms: int = 0


def results_json(results: list[ActionResult]) -> str:
    """The results as the adapter prints them: a JSON list, one object per action run."""
    return json.dumps([r.model_dump(exclude_none=True) for r in results], indent=2) + "\n"


def host_allowed(host: str, allowed: list[str]) -> bool:
    """Whether `host` is on the allow-list: an exact name, or `*.suffix` for any
    subdomain of suffix (not the suffix itself, as in Wave). No list allows all."""
    if not allowed:
        return True
    host = host.lower().rstrip(".")
    for entry in allowed:
        entry = entry.lower().rstrip(".")
        if host == entry or (entry.startswith("*.") and host.endswith(entry[1:])):
            return True
    return False


def refusal(url: str, allowed: list[str]) -> str | None:
    """Why the allow-list refuses `url`, or None. With a list, only http(s) and ws(s)
    URLs to listed hosts are fetched; `data:`, `blob:` and `about:` stay in the page."""
    if not allowed:
        return None
    parts = urlsplit(url)
    if parts.scheme in ("data", "blob", "about"):
        return None
    if parts.scheme not in ("http", "https", "ws", "wss"):
        return f"{parts.scheme}: URLs are not allowed when allowed_domains is set"
    host = parts.hostname or ""
    if host_allowed(host, allowed):
        return None
    return f"host '{host}' is not in allowed_domains ({', '.join(allowed)})"


def truncate(text: str, limit: int) -> tuple[str, bool]:
    """`text` cut to at most `limit` bytes of UTF-8 (never inside a character), and
    whether it was cut."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text, False
    return raw[:limit].decode("utf-8", errors="ignore"), True


__all__ = [
    "Action",
    "ActionListError",
    "ActionResult",
    "host_allowed",
    "parse_actions",
    "refusal",
    "results_json",
    "truncate",
]
