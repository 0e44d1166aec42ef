"""A small JSON document that a JSON Schema accepts, for twins that must answer in a shape.

`sample(schema)` walks the schema and builds a plausible instance: every property
(only the required ones past a few levels), one item per array (more when
`minItems` asks), the first enum value, strings that match `pattern` (a regex sampler
over Python's own regex parser), `format` and length limits, numbers inside their
bounds. `prefer(path, schema)` may choose a value for a property first (a review's
verdict, a judge's `pass`); names give strings a plausible look (a `*url` is a URL,
a `repository` is `owner/name`), so documents handed downstream read like real ones.

It is a best effort: `valid(schema, doc)` says whether the result really is accepted.
"""

from __future__ import annotations

import copy
import re
import string
from collections.abc import Callable

# re._parser is the regex module's own parser (sre_parse before 3.11, which warns)
from re import _parser as sre  # type: ignore[attr-defined]
from typing import Any

import jsonschema

Prefer = Callable[[tuple[str, ...], dict[str, Any]], Any]
NO_PREFERENCE = object()
DEPTH_ALL_PROPERTIES = 6  # below this depth only required properties are filled in

_FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "uri": "https://github.com/re-cinq/wave/pull/1",
    "url": "https://github.com/re-cinq/wave/pull/1",
    "uri-reference": "https://github.com/re-cinq/wave/pull/1",
    "email": "twin@example.com",
    "uuid": "00000000-0000-4000-8000-000000000001",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
}


def valid(schema: dict[str, Any], doc: Any) -> bool:
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError:
        return False
    except jsonschema.SchemaError:
        return True  # a schema the validator itself cannot use: nothing to hold the doc to
    return True


def sample(schema: dict[str, Any], prefer: Prefer | None = None) -> Any:
    """An instance of `schema` (see the module docstring)."""
    return _Sampler(schema, prefer).value(schema, (), 0)


class _Sampler:
    def __init__(self, root: dict[str, Any], prefer: Prefer | None) -> None:
        self.root = root
        self.prefer = prefer
        self.counter = 0

    def resolve(self, schema: Any) -> dict[str, Any]:
        seen = 0
        while isinstance(schema, dict) and "$ref" in schema and seen < 20:
            ref = schema["$ref"]
            target: Any = self.root
            if isinstance(ref, str) and ref.startswith("#"):
                for part in [p for p in ref[1:].split("/") if p]:
                    target = target.get(part.replace("~1", "/").replace("~0", "~"), {})
            else:
                target = {}
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**target, **rest}
            seen += 1
        if not isinstance(schema, dict):
            return {}
        if "allOf" in schema:
            merged = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                merged = _merge(merged, self.resolve(part))
            schema = merged
        return schema

    def value(self, schema: Any, path: tuple[str, ...], depth: int) -> Any:
        schema = self.resolve(schema)
        if self.prefer is not None:
            chosen = self.prefer(path, schema)
            if chosen is not NO_PREFERENCE:
                return chosen
        if "const" in schema:
            return schema["const"]
        if schema.get("enum"):
            return schema["enum"][0]
        for key in ("oneOf", "anyOf"):
            options = [self.resolve(o) for o in schema.get(key) or []]
            options = [o for o in options if o.get("type") != "null"] or options
            if options:
                base = {k: v for k, v in schema.items() if k != key}
                return self.value(_merge(base, options[0]), path, depth)
        kind = _type_of(schema)
        if kind == "object":
            return self.object(schema, path, depth)
        if kind == "array":
            return self.array(schema, path, depth)
        if kind == "string":
            return self.string(schema, path)
        if kind == "integer":
            return int(_number(schema, path, integer=True))
        if kind == "number":
            return _number(schema, path, integer=False)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self.string(schema, path)

    def object(self, schema: dict[str, Any], path: tuple[str, ...], depth: int) -> dict[str, Any]:
        props: dict[str, Any] = schema.get("properties") or {}
        required = list(schema.get("required") or [])
        names = list(props) if depth < DEPTH_ALL_PROPERTIES else []
        names += [r for r in required if r not in names]
        out = {name: self.value(props.get(name, {}), (*path, name), depth + 1) for name in names}
        extra = schema.get("additionalProperties")
        want = int(schema.get("minProperties") or 0)
        index = 0
        while len(out) < want:
            index += 1
            sub = extra if isinstance(extra, dict) else {"type": "string"}
            out[f"key{index}"] = self.value(sub, (*path, f"key{index}"), depth + 1)
        return out

    def array(self, schema: dict[str, Any], path: tuple[str, ...], depth: int) -> list[Any]:
        low = int(schema.get("minItems") or 0)
        high = schema.get("maxItems")
        count = max(low, 1) if high is None else min(max(low, 1), int(high))
        prefix = schema.get("prefixItems") or (
            schema["items"] if isinstance(schema.get("items"), list) else []
        )
        items = schema.get("items") if isinstance(schema.get("items"), dict) else {}
        out: list[Any] = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            resolved = self.resolve(sub)
            if schema.get("uniqueItems") and resolved.get("enum"):
                enum = resolved["enum"]
                if i >= len(enum):
                    break
                out.append(enum[i])
                continue
            value = self.value(sub, (*path, str(i)), depth + 1)
            if schema.get("uniqueItems") and value in out:
                value = _vary(value, i)
            out.append(value)
        return out

    def string(self, schema: dict[str, Any], path: tuple[str, ...]) -> str:
        if schema.get("pattern"):
            text = pattern_sample(schema["pattern"])
        elif schema.get("format") in _FORMATS:
            text = _FORMATS[schema["format"]]
        else:
            text = _named_string(path)
        low, high = int(schema.get("minLength") or 0), schema.get("maxLength")
        if len(text) < low:
            text += "x" * (low - len(text))
        if high is not None and len(text) > int(high):
            text = text[: int(high)]
        return text


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(a)
    for key, value in b.items():
        if key == "properties" and isinstance(out.get(key), dict):
            out[key] = {**out[key], **value}
        elif key == "required" and isinstance(out.get(key), list):
            out[key] = list(dict.fromkeys([*out[key], *value]))
        else:
            out[key] = value
    return out


def _type_of(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _number(schema: dict[str, Any], path: tuple[str, ...], integer: bool) -> float:
    low = schema.get("minimum")
    high = schema.get("maximum")
    if schema.get("exclusiveMinimum") is not None and not isinstance(
        schema["exclusiveMinimum"], bool
    ):
        low = schema["exclusiveMinimum"] + (1 if integer else 0.01)
    if schema.get("exclusiveMaximum") is not None and not isinstance(
        schema["exclusiveMaximum"], bool
    ):
        high = schema["exclusiveMaximum"] - (1 if integer else 0.01)
    name = path[-1].lower() if path else ""
    guess: float = 1
    if "confidence" in name or "score" in name or "ratio" in name:
        guess = 0.9 if not integer else 1
    elif "number" in name or name in ("pr", "issue", "id"):
        guess = 42
    if low is not None and guess < low:
        guess = low
    if high is not None and guess > high:
        guess = high
    step = schema.get("multipleOf")
    if step:
        guess = (guess // step) * step or step
    return round(guess) if integer else float(guess)


def _named_string(path: tuple[str, ...]) -> str:
    name = next((p for p in reversed(path) if not p.isdigit()), "value").lower()
    if name.endswith("url") or name == "link" or name.endswith("_uri"):
        return "https://github.com/re-cinq/wave/pull/1"
    if name in ("repository", "repo", "full_name"):
        return "re-cinq/wave"
    if name in ("owner",):
        return "re-cinq"
    if name in ("branch", "head_branch", "base_branch", "base", "head"):
        return "main"
    if name.endswith("path") or name in ("file", "filename", "location"):
        return "README.md"
    if "timestamp" in name or name.endswith("_at") or name == "date":
        return "2026-01-01T00:00:00Z"
    if name in ("sha", "commit", "commit_sha"):
        return "0000000000000000000000000000000000000000"
    return f"twin {name.replace('_', ' ')}"


def _vary(value: Any, index: int) -> Any:
    if isinstance(value, str):
        return f"{value} {index}"
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value + index
    if isinstance(value, dict):
        return {**value, "_twin_index": index}
    return value


# --------------------------------------------------------------------------- patterns

_CATEGORIES = {
    sre.CATEGORY_DIGIT: "0",
    sre.CATEGORY_NOT_DIGIT: "a",
    sre.CATEGORY_WORD: "a",
    sre.CATEGORY_NOT_WORD: "-",
    sre.CATEGORY_SPACE: " ",
    sre.CATEGORY_NOT_SPACE: "a",
}


def pattern_sample(pattern: str) -> str:
    """A string the (search) regex `pattern` matches, or a plain word if none is found."""
    try:
        parsed = sre.parse(pattern)
    except re.error:
        return "twin"
    text = _emit(parsed)
    return text if re.search(pattern, text) else "twin"


def _emit(items: Any) -> str:
    out = []
    for op, arg in items:
        out.append(_emit_one(op, arg))
    return "".join(out)


def _emit_one(op: Any, arg: Any) -> str:
    if op is sre.LITERAL:
        return chr(arg)
    if op is sre.NOT_LITERAL:
        return "a" if chr(arg) != "a" else "b"
    if op is sre.ANY:
        return "a"
    if op is sre.IN:
        return _from_set(arg)
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
        low, _high, sub = arg
        return _emit(sub) * low
    if op is sre.SUBPATTERN:
        return _emit(arg[-1])
    if op is sre.BRANCH:
        return _emit(arg[1][0])
    if op in (sre.AT, sre.ASSERT_NOT, sre.GROUPREF):
        return ""
    if op is sre.ASSERT:
        return ""
    if op is sre.CATEGORY:
        return _CATEGORIES.get(arg, "a")
    return ""


def _from_set(items: Any) -> str:
    negate = any(op is sre.NEGATE for op, _ in items)
    if negate:
        banned = set()
        for op, arg in items:
            if op is sre.LITERAL:
                banned.add(chr(arg))
        return next(c for c in string.ascii_letters + string.digits if c not in banned)
    for op, arg in items:
        if op is sre.LITERAL:
            return chr(arg)
        if op is sre.RANGE:
            low, high = arg
            for preferred in ("a", "0", "A"):
                if low <= ord(preferred) <= high:
                    return preferred
            return chr(low)
        if op is sre.CATEGORY:
            return _CATEGORIES.get(arg, "a")
    return "a"
