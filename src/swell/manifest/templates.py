"""`{{ ... }}` templates in prompts and scripts.

Prompts get values inserted as text. Scripts never get a value spliced into shell
code: each placeholder becomes a reference to an environment variable, written
for the quoting context it sits in, so model output and artifacts cannot inject
commands (see docs/manifest.md, "Templates").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from swell.manifest.expressions import (
    ExpressionError,
    MissingVariable,
    Node,
    evaluate,
    parse_expression,
    paths,
    to_text,
)

_PLACEHOLDER = re.compile(r"\{\{-?(.*?)-?\}\}", re.DOTALL)


@dataclass(frozen=True)
class Template:
    """A parsed template: literal text chunks around placeholders."""

    source: str
    literals: tuple[str, ...]  # len(placeholders) + 1
    placeholders: tuple[tuple[str, Node], ...]

    def variables(self) -> list[tuple[str | int, ...]]:
        return [p for _, node in self.placeholders for p in paths(node)]


@lru_cache(maxsize=2048)
def parse_template(text: str) -> Template:
    """Parse a template; raises ExpressionError naming the bad placeholder."""
    literals: list[str] = []
    holders: list[tuple[str, Node]] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(text):
        literals.append(text[pos : match.start()])
        expr = match.group(1).strip()
        try:
            holders.append((expr, parse_expression(expr)))
        except ExpressionError as exc:
            raise ExpressionError(f"in {{{{ {expr} }}}}: {exc}") from None
        pos = match.end()
    literals.append(text[pos:])
    return Template(text, tuple(literals), tuple(holders))


@dataclass
class Rendered:
    text: str
    env: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    preview: str = ""  # scripts: the text with values inlined, for people to read


def _value(node: Node, namespace: Mapping[str, Any], missing: list[str]) -> str:
    try:
        return to_text(evaluate(node, namespace))
    except MissingVariable as exc:
        missing.append(exc.path)
        return ""


def render_text(text: str, namespace: Mapping[str, Any]) -> Rendered:
    """Render a prompt-like template; unknown variables render empty and are reported."""
    tpl = parse_template(text)
    if not tpl.placeholders:
        return Rendered(text, preview=text)
    missing: list[str] = []
    out = [tpl.literals[0]]
    for (_, node), literal in zip(tpl.placeholders, tpl.literals[1:], strict=True):
        out.append(_value(node, namespace, missing))
        out.append(literal)
    rendered = "".join(out)
    return Rendered(rendered, missing=missing, preview=rendered)


# ----------------------------------------------------------------------- shell scripts


def _shell_contexts(literals: tuple[str, ...]) -> list[str]:
    """The quoting context at each placeholder: normal, double, single, comment, heredoc,
    heredoc_q."""
    state = "normal"
    heredocs: list[tuple[str, bool, bool]] = []  # (delimiter, quoted, strip_tabs) pending
    # open `$( ... )`: the state to return to and the parentheses opened inside
    subst: list[tuple[str, int]] = []
    in_heredoc: tuple[str, bool, bool] | None = None
    line_buf = ""
    contexts: list[str] = []
    for index, chunk in enumerate(literals):
        i = 0
        while i < len(chunk):
            ch = chunk[i]
            if in_heredoc is not None:
                if ch == "\n":
                    delim, _, strip = in_heredoc
                    line = line_buf.lstrip("\t") if strip else line_buf
                    line_buf = ""
                    if line == delim:
                        in_heredoc = heredocs.pop(0) if heredocs else None
                else:
                    line_buf += ch
                i += 1
                continue
            if (
                state in ("normal", "double")
                and chunk.startswith("$(", i)
                and not chunk.startswith("$((", i)
            ):
                # a command substitution starts a fresh quoting context
                subst.append((state, 0))
                state = "normal"
                i += 2
                continue
            if state == "normal":
                if ch == "\\":
                    i += 2
                    continue
                if ch == "'":
                    state = "single"
                elif ch == '"':
                    state = "double"
                elif ch == "(" and subst:
                    subst[-1] = (subst[-1][0], subst[-1][1] + 1)
                elif ch == ")" and subst:
                    outer, depth = subst.pop()
                    if depth:
                        subst.append((outer, depth - 1))
                    else:
                        state = outer
                elif ch == "#" and (
                    # a word right after a placeholder never starts a comment
                    (i == 0 and index == 0) or (i > 0 and chunk[i - 1] in " \t\n;&|()<>")
                ):
                    state = "comment"
                elif chunk.startswith("<<", i) and not chunk.startswith("<<<", i):
                    match = re.match(r"<<(-?)\s*(['\"]?)([A-Za-z0-9_]+)\2", chunk[i:])
                    if match:
                        heredocs.append(
                            (match.group(3), bool(match.group(2)), bool(match.group(1)))
                        )
                        i += match.end()
                        continue
                elif ch == "\n" and heredocs:
                    in_heredoc = heredocs.pop(0)
                    line_buf = ""
            elif state == "comment":
                if ch == "\n":
                    state = "normal"
                    continue  # read the newline again: a heredoc body may start here
            elif state == "single":
                if ch == "'":
                    state = "normal"
            elif state == "double":
                if ch == "\\":
                    i += 2
                    continue
                if ch == '"':
                    state = "normal"
            i += 1
        if index < len(literals) - 1:
            if in_heredoc is not None:
                quoted = f"heredoc_q:{in_heredoc[0]}:{int(in_heredoc[2])}"
                contexts.append(quoted if in_heredoc[1] else "heredoc")
            else:
                contexts.append(state)
    return contexts


TRUSTED_ROOTS = ("project",)


def _trusted(node: Node) -> bool:
    return node[0] == "path" and str(node[1][0]) in TRUSTED_ROOTS


def render_script(text: str, namespace: Mapping[str, Any], env_prefix: str = "SWELL_V") -> Rendered:
    """Render a shell script: placeholders become quoted env-var references.

    A value reaches the shell only through the environment, and parameter
    expansion is never re-parsed as code, so no value can inject a command.
    The exception is `{{ project.X }}`: wave.yaml's project variables are written
    by the project's owner as shell code (`test_command`), so they are inserted as is.
    """
    tpl = parse_template(text)
    if not tpl.placeholders:
        return Rendered(text, preview=text)
    contexts = _shell_contexts(tpl.literals)
    missing: list[str] = []
    env: dict[str, str] = {}
    out = [tpl.literals[0]]
    preview = [tpl.literals[0]]
    for n, ((_, node), literal, ctx) in enumerate(
        zip(tpl.placeholders, tpl.literals[1:], contexts, strict=True), start=1
    ):
        value = _value(node, namespace, missing)
        name = f"{env_prefix}{n}"
        if _trusted(node):
            out.append(value)
        elif ctx.startswith("heredoc_q:"):
            # a quoted heredoc expands nothing, so the text is inert unless it
            # contains the delimiter line, which would end the heredoc early
            _, delim, strip = ctx.split(":")
            lines = [ln.lstrip("\t") if strip == "1" else ln for ln in value.split("\n")]
            if delim in lines:
                raise ExpressionError(f"value contains the heredoc delimiter line {delim!r}")
            out.append(value)
        else:
            env[name] = value
            out.append(
                {
                    "normal": f'"${{{name}}}"',
                    "comment": f'"${{{name}}}"',
                    "double": f"${{{name}}}",
                    "single": f"'\"${{{name}}}\"'",
                    "heredoc": f"${{{name}}}",
                }[ctx]
            )
        out.append(literal)
        preview.append(value)
        preview.append(literal)
    return Rendered("".join(out), env=env, missing=missing, preview="".join(preview))


Renderer = Callable[[str, Mapping[str, Any]], Rendered]
