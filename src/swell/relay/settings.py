"""When a step relays: thresholds, context windows, the summarizer, the limits."""

from __future__ import annotations

import re
from dataclasses import dataclass

from swell.manifest.models import Manifest, Step

DEFAULT_THRESHOLD = 80.0
DEFAULT_MAX_RELAYS = 3
DEFAULT_SUMMARIZER_CAP = 100_000  # tokens of history the summarizer may be given
CHARS_PER_TOKEN = 4  # for estimating a transcript's tokens

# context windows (tokens) by model name prefix; the longest matching prefix wins
WINDOWS = {
    "claude-opus-4-1": 200_000, "claude-opus-4": 200_000, "claude-sonnet-4": 200_000,
    "claude-3-7-sonnet": 200_000, "claude-3-5": 200_000, "claude-haiku-4": 200_000, "claude": 200_000,
    "sonnet": 200_000, "opus": 200_000, "haiku": 200_000,
    "gpt-5": 400_000, "gpt-4.1": 1_047_576, "gpt-4o": 128_000, "o3": 200_000, "o4-mini": 200_000,
    "codex": 400_000, "gemini-2.5": 1_048_576, "gemini-3": 1_048_576, "gemini": 1_048_576,
    "smollm2": 8_192, "qwen2.5": 32_768,
}  # fmt: skip


def context_window(model: str | None) -> int | None:
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in WINDOWS if name.startswith(prefix)]
    return WINDOWS[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class RelaySettings:
    threshold_percent: float
    window: int
    summarizer: str | None  # persona; None = the built-in summarizer on the local model
    max_relays: int
    summarizer_cap: int  # tokens

    @property
    def limit(self) -> int:
        """Context tokens at which the relay fires."""
        return int(self.window * self.threshold_percent / 100)


def _percent(trigger: str | None) -> float | None:
    match = re.fullmatch(r"\s*token_limit_(\d+(?:\.\d+)?)%?\s*", trigger or "")
    return float(match.group(1)) if match else None


def relay_settings(
    manifest: Manifest, step: Step, model: str | None
) -> tuple[RelaySettings | None, str | None]:
    """The step's relay settings, or None (off); a reason when it is configured but
    cannot work (no known context window)."""
    relay = manifest.runtime.relay
    compaction = step.handover.compaction if step.handover else None
    if not relay.strategy and compaction is None:
        return None, None
    if relay.strategy and relay.strategy != "summarize_to_checkpoint" and compaction is None:
        return None, f"relay strategy '{relay.strategy}' is not known; only summarize_to_checkpoint"
    window = relay.context_window or context_window(model)
    if not window:
        return None, (
            f"relay is on but the context window of model '{model}' is unknown; "
            "set runtime.relay.context_window"
        )
    percent = (
        _percent(compaction.trigger) if compaction else None
    ) or relay.token_threshold_percent
    return RelaySettings(
        threshold_percent=percent or DEFAULT_THRESHOLD,
        window=window,
        summarizer=(compaction.persona if compaction else None) or relay.summarizer_persona,
        max_relays=relay.max_relays or DEFAULT_MAX_RELAYS,
        summarizer_cap=relay.summarizer_max_tokens or DEFAULT_SUMMARIZER_CAP,
    ), None
