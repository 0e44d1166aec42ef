"""`runtime.routing.rules` and `default`: which pipeline an incoming input goes to, as
Wave's router decides (internal/pipeline/router.go): rules by `priority`, highest first
(equal priorities in file order); a rule matches when its `pattern` matches the input
and every `match_labels` entry matches the item's label of that key; the first match
wins, else `default` (none: the input is not routed)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from swell.manifest.wave_models import RoutingConfig, RoutingRule


@dataclass(frozen=True)
class Route:
    """The pipeline chosen (None: no rule matched and there is no default), and why."""

    pipeline: str | None
    rule: int | None  # the index of the rule in runtime.routing.rules, None: the default
    why: str


def route(config: RoutingConfig, text: str, labels: dict[str, str] | None = None) -> Route:
    """The pipeline for `text` (with the item's `labels`)."""
    ordered = sorted(enumerate(config.rules), key=lambda pair: -pair[1].priority)
    for index, rule in ordered:
        if _matches(rule, text, labels or {}):
            return Route(rule.pipeline, index, _describe(index, rule))
    if config.default:
        return Route(config.default, None, "no rule matched: runtime.routing.default")
    return Route(None, None, "no rule matched and runtime.routing.default is not set")


def _describe(index: int, rule: RoutingRule) -> str:
    parts = [f"pattern {rule.pattern!r}"] if rule.pattern else []
    parts += [f"{k}={v!r}" for k, v in rule.match_labels.items()]
    what = ", ".join(parts) or "a catch-all"
    return f"rule {index + 1} ({what}, priority {rule.priority})"


def _matches(rule: RoutingRule, text: str, labels: dict[str, str]) -> bool:
    if rule.pattern and not pattern_matches(rule.pattern, text):
        return False
    return all(
        key in labels and pattern_matches(value, labels[key])
        for key, value in rule.match_labels.items()
    )


def pattern_matches(pattern: str, text: str) -> bool:
    """Wave's matchPattern: the trimmed input against a glob (Go's filepath.Match: `*`
    and `?` stop at `/`), then case-insensitively; a pattern without `*?[` also
    matches as a case-insensitive substring."""
    text = text.strip()
    if _glob(pattern, text) or _glob(pattern.lower(), text.lower()):
        return True
    if not any(c in pattern for c in "*?["):
        return pattern.lower() in text.lower()
    return False


def _glob(pattern: str, text: str) -> bool:
    regex = _compiled(pattern)
    return regex is not None and regex.fullmatch(text) is not None


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    """filepath.Match's syntax as a regex; None for a malformed pattern (Go's
    ErrBadPattern, which matches nothing)."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\":
            if i + 1 == len(pattern):
                return None
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] in ("^", "]") else i + 1)
            if end < 0:
                return None
            body = pattern[i + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            if not body:
                return None
            body = body.replace("\\", "\\\\").replace("[", "\\[")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out), re.DOTALL)
    except re.error:
        return None
