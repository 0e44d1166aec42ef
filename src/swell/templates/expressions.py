"""The small expression language inside `{{ ... }}`.

Deliberately tiny and side-effect free (the "sandbox" is that nothing else exists):
literals, dotted paths (`steps.run-tests.exit_code`, Go-style `.ExitCode`),
comparisons `== != < <= > >=`, `contains`, and `&& || !` (or `and or not`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

Node = tuple[Any, ...]

# Go-template spellings used in Wave's docs, mapped to swell's names.
GO_ALIASES = {"ExitCode": "exit_code", "Stdout": "stdout", "Stderr": "stderr", "Input": "input"}

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
     |(?P<num>-?\d+(?:\.\d+)?)
     |(?P<op>==|!=|<=|>=|&&|\|\||[<>!()\[\].])
     |(?P<name>[A-Za-z_][A-Za-z0-9_-]*)
    )""",
    re.VERBOSE,
)
_KEYWORDS = {"and": "&&", "or": "||", "not": "!"}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None, "nil": None}


class ExpressionError(ValueError):
    """The expression does not parse."""


class MissingVariable(LookupError):
    """A path in the expression has no value."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise ExpressionError(f"unexpected character {text[pos:].strip()[:1]!r} in {text!r}")
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "name" and value in _KEYWORDS:
            kind, value = "op", _KEYWORDS[value]
        elif kind == "name" and value == "contains":
            kind = "op"
        out.append((kind, value))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self, value: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if tok is None or (value is not None and tok[1] != value):
            want = f"'{value}'" if value else "a value"
            raise ExpressionError(f"expected {want} in {self.text!r}")
        self.i += 1
        return tok

    def parse(self) -> Node:
        if not self.toks:
            raise ExpressionError("empty expression")
        node = self.or_()
        if self.peek() is not None:
            raise ExpressionError(f"unexpected {self.peek()[1]!r} in {self.text!r}")  # type: ignore[index]
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            node = ("or", node, self.and_())
        return node

    def and_(self) -> Node:
        node = self.not_()
        while self.peek() == ("op", "&&"):
            self.take()
            node = ("and", node, self.not_())
        return node

    def not_(self) -> Node:
        if self.peek() == ("op", "!"):
            self.take()
            return ("not", self.not_())
        return self.cmp()

    def cmp(self) -> Node:
        left = self.primary()
        tok = self.peek()
        if tok and tok[0] == "op" and tok[1] in ("==", "!=", "<", "<=", ">", ">=", "contains"):
            self.take()
            return ("cmp", tok[1], left, self.primary())
        return left

    def primary(self) -> Node:
        tok = self.peek()
        if tok is None:
            raise ExpressionError(f"expression ends too early: {self.text!r}")
        kind, value = tok
        if kind == "str":
            self.take()
            return ("lit", _unquote(value))
        if kind == "num":
            self.take()
            return ("lit", float(value) if "." in value else int(value))
        if (kind, value) == ("op", "("):
            self.take()
            node = self.or_()
            self.take(")")
            return node
        if kind == "name" and value in _LITERALS:
            self.take()
            return ("lit", _LITERALS[value])
        if kind == "name" or (kind, value) == ("op", "."):
            return self.path()
        raise ExpressionError(f"unexpected {value!r} in {self.text!r}")

    def path(self) -> Node:
        go_style = False
        if self.peek() == ("op", "."):
            self.take()
            go_style = True
        kind, first = self.take()
        if kind != "name":
            raise ExpressionError(f"expected a name in {self.text!r}")
        parts: list[str | int] = [GO_ALIASES.get(first, first) if go_style else first]
        while True:
            tok = self.peek()
            if tok == ("op", "."):
                self.take()
                kind, name = self.take()
                if kind not in ("name", "num"):
                    raise ExpressionError(f"expected a name after '.' in {self.text!r}")
                parts.append(name)
            elif tok == ("op", "["):
                self.take()
                kind, idx = self.take()
                if kind == "num":
                    parts.append(int(float(idx)))
                elif kind == "str":
                    parts.append(_unquote(idx))
                else:
                    raise ExpressionError(f"expected an index in {self.text!r}")
                self.take("]")
            else:
                return ("path", tuple(parts))


def _unquote(token: str) -> str:
    body = token[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


@lru_cache(maxsize=4096)
def parse_expression(text: str) -> Node:
    """Parse `text` (without braces) into a tree; raises ExpressionError."""
    return _Parser(text).parse()


def paths(node: Node) -> list[tuple[str | int, ...]]:
    """Every variable path the expression reads."""
    if node[0] == "path":
        return [node[1]]
    if node[0] == "lit":
        return []
    return [p for child in node[1:] if isinstance(child, tuple) for p in paths(child)]


def lookup(namespace: Mapping[str, Any], path: tuple[str | int, ...]) -> Any:
    """Resolve a dotted path; raises MissingVariable."""
    value: Any = namespace
    for part in path:
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, Mapping) and isinstance(part, int) and str(part) in value:
            value = value[str(part)]
        elif isinstance(value, list) and isinstance(part, int) and -len(value) <= part < len(value):
            value = value[part]
        else:
            raise MissingVariable(".".join(str(p) for p in path))
    return value


def _num(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def _compare(op: str, left: Any, right: Any) -> bool:
    if op == "contains":
        if isinstance(left, list | dict):
            return right in left
        return to_text(right) in to_text(left)
    ln, rn = _num(left), _num(right)
    if ln is not None and rn is not None:
        a: Any = ln
        b: Any = rn
    else:
        a, b = to_text(left), to_text(right)
    if op == "==":
        return bool(a == b)
    if op == "!=":
        return bool(a != b)
    try:
        return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])
    except TypeError:
        return False


def truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() not in ("", "false", "0", "no", "null")
    return bool(value)


def evaluate(node: Node, namespace: Mapping[str, Any]) -> Any:
    """Evaluate a parsed expression; raises MissingVariable for unknown paths."""
    op = node[0]
    if op == "lit":
        return node[1]
    if op == "path":
        return lookup(namespace, node[1])
    if op == "not":
        return not truthy(evaluate(node[1], namespace))
    if op == "and":
        return truthy(evaluate(node[1], namespace)) and truthy(evaluate(node[2], namespace))
    if op == "or":
        return truthy(evaluate(node[1], namespace)) or truthy(evaluate(node[2], namespace))
    if op == "cmp":
        return _compare(node[1], evaluate(node[2], namespace), evaluate(node[3], namespace))
    raise ExpressionError(f"unknown node {op}")  # pragma: no cover


def to_text(value: Any) -> str:
    """How a value reads when inserted into text or stored as a context value."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True)
    return str(value)
