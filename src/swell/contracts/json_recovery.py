"""JSON out of what language models really write, as Wave's json_schema contract reads it.

A strict parse first; when that fails, repairs are tried in order, each on the result
of the ones before, and the first text that parses wins. The levels are cumulative:

- `conservative`: the JSON inside a code fence or inline code; the first complete
  object or array inside prose (found by bracket depth, strings respected); `//`,
  `#` and `/* */` comments and trailing commas removed (never inside strings).
- `progressive` (the default, as in Wave): also single-quoted strings and bare keys
  (`{name: 'x'}`), Python's `True`/`False`/`None`, and the commas missing between two
  properties or elements (`{"a": 1 "b": 2}`).
- `aggressive`: also closing the brackets a cut-off answer left open.

Wave's "wrapper" (an object with a non-empty `error_type` and `raw_output` and at least
three of its envelope's indicator keys, WRAPPER_KEYS) is unwrapped to its `raw_output`
unless disabled; a wrapper whose `raw_output` holds no JSON is an error (WrappedNotJson),
never the document itself.

Each repair that was needed is named, so the contract can say what it recovered.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Literal

Level = Literal["conservative", "progressive", "aggressive"]
LEVELS: tuple[Level, ...] = ("conservative", "progressive", "aggressive")
# Wave's indicators of its error envelope (internal/contract/jsonschema_wrapper.go)
WRAPPER_KEYS = ("error_type", "raw_output", "contract_type", "step_id", "final_error", "attempts")


class NotJson(ValueError):
    """No repair at the allowed level made the text parse."""


class WrappedNotJson(NotJson):
    """The text is an error wrapper whose `raw_output` holds no JSON."""


def _loads(text: str) -> Any:
    return json.loads(text)


def strip_comments(text: str) -> str:
    """Remove `//…`, `#…` (to the end of the line) and `/*…*/` outside strings."""
    out: list[str] = []
    quote: str | None = None
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote is not None:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            i += 1
        elif ch == '"':
            quote = ch
            out.append(ch)
            i += 1
        elif text.startswith("//", i) or ch == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def strip_trailing_commas(text: str) -> str:
    """`[1, 2,]` and `{"a": 1,}` lose the comma before the closing bracket."""
    return _outside_strings(text, lambda chunk: re.sub(r",(\s*[}\]])", r"\1", chunk))


def _outside_strings(text: str, change: Callable[[str], str]) -> str:
    """Apply `change` to the parts of `text` that are not inside double-quoted strings."""
    parts = re.split(r'("(?:[^"\\]|\\.)*")', text)
    return "".join(p if i % 2 else change(p) for i, p in enumerate(parts))


def single_quotes(text: str) -> str:
    """'…' strings (outside double-quoted ones) become "…" strings."""

    def convert(chunk: str) -> str:
        def one(match: re.Match[str]) -> str:
            body = match.group(1).replace('\\"', '"').replace("\\'", "'")
            return json.dumps(body)

        return re.sub(r"'((?:[^'\\]|\\.)*)'", one, chunk)

    return _outside_strings(text, convert)


def bare_keys(text: str) -> str:
    """`{name: 1}` becomes `{"name": 1}`; Python's True/False/None become JSON's."""

    def convert(chunk: str) -> str:
        chunk = re.sub(r"([{,]\s*)([A-Za-z_$][\w$-]*)(\s*:)", r'\1"\2"\3', chunk)
        return re.sub(
            r"\b(True|False|None)\b",
            lambda m: {"True": "true", "False": "false", "None": "null"}[m.group(1)],
            chunk,
        )

    return _outside_strings(text, convert)


def missing_commas(text: str) -> str:
    """`{"a": 1 "b": 2}` and `["x" "y"]` get the comma between the two: a string, object
    or array that starts right after a value ends (outside strings)."""
    out: list[str] = []
    in_string = escaped = False
    last = ""  # the last character outside strings that is not blank
    for ch in text:
        if in_string:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string, last = False, '"'
            continue
        if ch in '"{[' and last and (last in '"}]' or last.isalnum()):
            out.append(",")
        in_string = ch == '"'
        if not ch.isspace():
            last = ch
        out.append(ch)
    return "".join(out)


def close_brackets(text: str) -> str:
    """Close the strings and brackets a cut-off answer left open."""
    stack: list[str] = []
    quote = False
    escaped = False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                quote = False
        elif ch == '"':
            quote = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    tail = '"' if quote else ""
    body = (text + tail).rstrip()
    body = body[:-1] if body.endswith(",") else body
    return body + "".join(reversed(stack))


def fenced(text: str) -> list[str]:
    """Bodies of ``` fences (```json first) and of inline `code` holding brackets."""
    fences = re.findall(r"```[ \t]*([\w-]*)[ \t]*\n(.*?)```", text, re.DOTALL)
    ordered = [body for lang, body in fences if lang.lower() == "json"]
    ordered += [body for lang, body in fences if lang.lower() != "json"]
    ordered += re.findall(r"`([\[{][^`]*[\]}])`", text)
    return [b.strip() for b in ordered if b.strip()]


def embedded(text: str, limit: int = 20) -> list[str]:
    """Complete JSON-looking objects or arrays inside prose, by bracket depth, in order
    (at most `limit`); an opening bracket never closed gives the rest of the text, for
    `close_brackets`."""
    found: list[str] = []
    start = 0
    while len(found) < limit:
        starts = [i for i in (text.find("{", start), text.find("[", start)) if i >= 0]
        if not starts:
            break
        begin = min(starts)
        end = _closing(text, begin)
        found.append(text[begin : end + 1] if end is not None else text[begin:])
        start = begin + 1
    return found


def _closing(text: str, begin: int) -> int | None:
    depth, quote, escaped = 0, False, False
    for end in range(begin, len(text)):
        c = text[end]
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                quote = False
        elif c == '"':
            quote = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return end
    return None


_REPAIRS: list[tuple[Level, str, Callable[[str], str]]] = [
    ("conservative", "removed comments", strip_comments),
    ("conservative", "removed trailing commas", strip_trailing_commas),
    ("progressive", "converted single-quoted strings", single_quotes),
    ("progressive", "quoted bare keys", bare_keys),
    ("progressive", "inserted missing commas", missing_commas),
    ("aggressive", "closed unbalanced brackets", close_brackets),
]


def _repair(text: str, level: Level) -> tuple[Any, list[str]]:
    allowed = LEVELS[: LEVELS.index(level) + 1]
    done: list[str] = []
    current = text
    for repair_level, what, repair in _REPAIRS:
        if repair_level not in allowed:
            continue
        changed = repair(current)
        if changed == current:
            continue
        current = changed
        done.append(what)
        try:
            return _loads(current), done
        except ValueError:
            continue
    raise NotJson("no repair made it parse")


def recover(text: str, level: Level = "progressive", unwrap: bool = True) -> tuple[Any, list[str]]:
    """The JSON value in `text` and what had to be done to get it (empty when it
    parsed as it was). Raises NotJson with the strict parser's error otherwise."""
    try:
        value: Any = _loads(text)
        steps: list[str] = []
    except ValueError as exc:
        strict = exc
        value, steps = _recover(text, level, strict)
    if unwrap and _is_wrapper(value):
        try:
            inner, more = recover(str(value["raw_output"]), level, unwrap=False)
        except NotJson as exc:
            raise WrappedNotJson(
                f"an error wrapper ({value.get('error_type')}) whose raw_output is not JSON: {exc}"
            ) from None
        return inner, [*steps, "unwrapped `raw_output` from an error wrapper", *more]
    return value, steps


def _recover(text: str, level: Level, strict: ValueError) -> tuple[Any, list[str]]:
    candidates: list[tuple[str, list[str]]] = [(text.strip(), [])]
    candidates += [(body, ["took the JSON from a code block"]) for body in fenced(text)]
    candidates += [
        (inner, ["took the JSON out of the text around it"])
        for inner in embedded(text)
        if inner != text.strip()
    ]
    for candidate, found in candidates:
        try:
            return _loads(candidate), found
        except ValueError:
            pass
        try:
            value, repaired = _repair(candidate, level)
        except NotJson:
            continue
        return value, [*found, *repaired]
    raise NotJson(str(strict))


def _is_wrapper(value: Any) -> bool:
    """As Wave detects its envelope: `error_type` and `raw_output` set, and at least three
    indicators in all (a non-empty one, or `attempts` above zero)."""
    if not isinstance(value, dict):
        return False
    if not value.get("error_type") or not value.get("raw_output"):
        return False
    attempts = value.get("attempts")
    counted = [k for k in WRAPPER_KEYS if k != "attempts" and value.get(k)]
    if isinstance(attempts, int | float) and not isinstance(attempts, bool) and attempts > 0:
        counted.append("attempts")
    return len(counted) >= 3


__all__ = ["LEVELS", "Level", "NotJson", "WrappedNotJson", "recover"]
