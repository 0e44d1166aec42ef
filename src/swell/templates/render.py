"""`{{ ... }}` templates in prompts and scripts.

Prompts get values inserted as text. Scripts never get a value spliced into shell
code: each placeholder becomes a reference to an environment variable, written for
the quoting context it sits in (`shell.py` reads the script to find it), and a script
that puts a value where the shell could read it as code is refused, so model output
and artifacts cannot inject commands (docs/security.md, "Templates are never code").
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from swell.templates.expressions import (
    ExpressionError,
    MissingVariable,
    Node,
    evaluate,
    parse_expression,
    paths,
    to_text,
)
from swell.templates.shell import ShellRefusal, read_script

_PLACEHOLDER = re.compile(r"\{\{-?(.*?)-?\}\}", re.DOTALL)
# `{{ project.* }}`, `{{ gate.*.text }}`: a prompt talking about placeholders. Wave
# leaves what it cannot resolve as written; swell does so for these, and only these
_WILDCARD = re.compile(r"[A-Za-z_][\w-]*(?:\.(?:\*|[\w-]+))*\.\*(?:\.[\w-]+)*")


@dataclass(frozen=True)
class Template:
    """A parsed template: literal text chunks around placeholders."""

    source: str
    literals: tuple[str, ...]  # len(placeholders) + 1
    placeholders: tuple[tuple[str, Node], ...]
    spans: tuple[tuple[int, int], ...] = ()  # of each placeholder in `source`

    def variables(self) -> list[tuple[str | int, ...]]:
        return [p for _, node in self.placeholders for p in paths(node)]


@lru_cache(maxsize=2048)
def parse_template(text: str) -> Template:
    """Parse a template; raises ExpressionError naming the bad placeholder."""
    literals: list[str] = []
    holders: list[tuple[str, Node]] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(text):
        expr = match.group(1).strip()
        if _WILDCARD.fullmatch(expr):
            continue  # prose naming a family (`{{ project.* }}`): text, as Wave keeps it
        literals.append(text[pos : match.start()])
        try:
            holders.append((expr, parse_expression(expr)))
        except ExpressionError as exc:
            raise ExpressionError(f"in {{{{ {expr} }}}}: {exc}") from None
        spans.append(match.span())
        pos = match.end()
    literals.append(text[pos:])
    return Template(text, tuple(literals), tuple(holders), tuple(spans))


@dataclass
class Rendered:
    text: str
    env: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    preview: str = ""  # scripts: the text with values inlined, for people to read
    sources: dict[str, str] = field(default_factory=dict)  # scripts: env name -> `{{ x }}`


def unset_warnings(missing: list[str]) -> list[str]:
    """What a run says about placeholders that rendered empty. A `context.KEY` is left
    out: lint made sure some step sets it, and before that step has run (the first
    visit of a loop) it is empty by design, not by mistake."""
    return [
        f"template variable '{m}' is not set; rendered empty"
        for m in missing
        if not m.startswith("context.")
    ]


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

TRUSTED_ROOTS = ("project",)
# forge values that are shell code (`{{ forge.cli_tool }} issue create`): detection
# gives each from a fixed table of lower-case words (gh, glab, tea, pr, mr, ...), never
# from a model or an artifact; a value of another shape is handled as data
CODE_FORGE_FIELDS = ("type", "cli_tool", "prefix", "pr_command")
_FORGE_WORD = re.compile(r"[a-z]*")
FIX_VALUE = "{value}"  # the guards' fixes name the placeholder with this


def _trusted(node: Node) -> bool:
    if node[0] != "path":
        return False
    path = node[1]
    if str(path[0]) == "forge":
        return len(path) == 2 and path[1] in CODE_FORGE_FIELDS
    return str(path[0]) in TRUSTED_ROOTS


def _code(node: Node, namespace: Mapping[str, Any]) -> str | None:
    """The value of a placeholder that goes into a script as code, or None (data)."""
    if not _trusted(node):
        return None
    value = _value(node, namespace, [])
    if node[1][0] == "forge" and not _FORGE_WORD.fullmatch(value):
        return None
    return value


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


class ScriptRefused(ExpressionError):
    """A script puts a value where the shell could read it as code (or where swell cannot
    tell): names the placeholder, where it is in the script, and the fix."""

    def __init__(self, text: str, tpl: Template, index: int, reason: str, fix: str) -> None:
        start, end = tpl.spans[index]
        self.placeholder = text[start:end]
        self.offset = start
        self.line, self.col = _line_col(text, start)
        super().__init__(
            f"{self.placeholder} (line {self.line} of the script) {reason}. "
            f"Fix: {fix.replace(FIX_VALUE, self.placeholder)}"
        )


# Linux caps one string of a new process's environment, `NAME=value` and its NUL, at 32
# pages (MAX_ARG_STRLEN): a longer one makes exec fail, and the script does not start
MAX_ENV_STRING = 32 * 4096


class ValueUnfit(ExpressionError):
    """A value that cannot reach a script through the environment: too large for one
    environment variable, or holding a NUL byte. Names the placeholder and the fix."""

    def __init__(self, text: str, tpl: Template, index: int, why: str) -> None:
        start, end = tpl.spans[index]
        self.placeholder = text[start:end]
        line = _line_col(text, start)[0]
        super().__init__(f"{self.placeholder} (line {line} of the script) {why}")


def _fit(text: str, tpl: Template, index: int, name: str, value: str) -> None:
    """Refuse a value the environment cannot carry, before exec fails on it."""
    if "\0" in value:
        raise ValueUnfit(
            text, tpl, index, "holds a NUL byte, which no environment variable can carry"
        )
    size = len(os.fsencode(value))
    if len(name) + size + 2 > MAX_ENV_STRING:
        raise ValueUnfit(
            text,
            tpl,
            index,
            f"is {size:,} bytes; a value reaches a script through one environment variable, "
            f"which Linux limits to {MAX_ENV_STRING // 1024} KiB. Fix: have the script read "
            "the file the value comes from, by its path (`{{ artifacts.NAME }}`, "
            "`{{ steps.STEP.artifacts.NAME }}`, or hand the file to a sub-pipeline with "
            "`config.inject`)",
        )


@dataclass(frozen=True)
class ScriptWarning:
    placeholder: str
    offset: int  # of the placeholder in the script text
    message: str


@dataclass(frozen=True)
class ScriptAnalysis:
    """How each placeholder goes into a script: `trusted` (inserted as shell code),
    `word`, `double`, `single` or `comment` (see render_script)."""

    contexts: tuple[str, ...]
    warnings: tuple[ScriptWarning, ...]


def analyse_script(text: str, namespace: Mapping[str, Any]) -> ScriptAnalysis:
    """Where each placeholder of a script sits; raises ScriptRefused (an ExpressionError)
    when one is where a value could be read as code. Only `{{ project.X }}` and the
    forge's words (CODE_FORGE_FIELDS) are read from `namespace`: they are shell code and
    change how the rest is read."""
    tpl = parse_template(text)
    trusted = tuple(_code(node, namespace) for _, node in tpl.placeholders)
    return _analyse(text, trusted)


@lru_cache(maxsize=1024)
def _analyse(text: str, trusted: tuple[str | None, ...]) -> ScriptAnalysis:
    tpl = parse_template(text)
    parts, holes, index = [tpl.literals[0]], list[int](), list[int]()
    # (start in the script as read, start in the template, project placeholder or None)
    segments: list[tuple[int, int, int | None]] = [(0, 0, None)]
    size = len(tpl.literals[0])
    for k, (value, literal) in enumerate(zip(trusted, tpl.literals[1:], strict=True)):
        if value is None:
            holes.append(size)
            index.append(k)
        else:
            segments.append((size, tpl.spans[k][0], k))
            parts.append(value)
            size += len(value)
        segments.append((size, tpl.spans[k][1], None))
        parts.append(literal)
        size += len(literal)
    if not holes:
        return ScriptAnalysis(("trusted",) * len(trusted), ())
    try:
        view = read_script("".join(parts), holes)
    except ShellRefusal as exc:
        if exc.hole is None:  # the lexer is lost: say where, name the first value
            start, origin, project = next(seg for seg in reversed(segments) if seg[0] <= exc.pos)
            line = _line_col(text, origin if project is not None else origin + exc.pos - start)[0]
            place = "" if project is None else f" in {{{{ {tpl.placeholders[project][0]} }}}}"
            reason = f"{exc.reason[:-1]} at line {line}{place})"
            raise ScriptRefused(text, tpl, index[0], reason, exc.fix) from None
        raise ScriptRefused(text, tpl, index[exc.hole], exc.reason, exc.fix) from None
    contexts = ["trusted"] * len(trusted)
    for hole, context in zip(index, view.contexts, strict=True):
        contexts[hole] = context
    warnings = []
    for hole, name in view.warnings:
        start, end = tpl.spans[index[hole]]
        warnings.append(
            ScriptWarning(
                text[start:end],
                start,
                f"{text[start:end]} is assigned to `{name}`, and the script uses `{name}` "
                "where bash evaluates a value as code (arithmetic, [[ -eq ]], a subscript, "
                'declare -i, ${!name}, read "$name"); check it first, or use expr',
            )
        )
    return ScriptAnalysis(tuple(contexts), tuple(warnings))


def render_script(text: str, namespace: Mapping[str, Any], env_prefix: str = "SWELL_V") -> Rendered:
    """Render a shell script: each placeholder becomes a quoted env-var reference.

    A value reaches the shell only through the environment, as a parameter expansion
    the shell expands once, as data; where a value could be read as code, the script
    is refused (ScriptRefused, an ExpressionError) instead (docs/security.md). The
    exception is `{{ project.X }}`: wave.yaml's project variables are written by the
    project's owner as shell code (`test_command`), so they are inserted as is; and so
    are the forge's fixed words (`{{ forge.cli_tool }}`, CODE_FORGE_FIELDS). A value the
    environment cannot carry (over MAX_ENV_STRING, or with a NUL byte) is refused
    (ValueUnfit, an ExpressionError) naming its placeholder: exec would fail on it.
    """
    tpl = parse_template(text)
    if not tpl.placeholders:
        return Rendered(text, preview=text)
    contexts = analyse_script(text, namespace).contexts
    missing: list[str] = []
    env: dict[str, str] = {}
    sources: dict[str, str] = {}
    out = [tpl.literals[0]]
    preview = [tpl.literals[0]]
    for n, ((_, node), literal, ctx) in enumerate(
        zip(tpl.placeholders, tpl.literals[1:], contexts, strict=True), start=1
    ):
        value = _value(node, namespace, missing)
        name = f"{env_prefix}{n}"
        if ctx == "trusted":
            out.append(value)
        else:
            if ctx != "comment":  # a comment is never read: its value is not handed over
                _fit(text, tpl, n - 1, name, value)
                env[name] = value
                start, end = tpl.spans[n - 1]
                sources[name] = text[start:end]
            out.append(
                {
                    "word": f'"${{{name}}}"',
                    "comment": f'"${{{name}}}"',
                    "double": f"${{{name}}}",
                    "single": f"'\"${{{name}}}\"'",
                }[ctx]
            )
        out.append(literal)
        preview.append(value)
        preview.append(literal)
    return Rendered(
        "".join(out), env=env, missing=missing, preview="".join(preview), sources=sources
    )


Renderer = Callable[[str, Mapping[str, Any]], Rendered]
