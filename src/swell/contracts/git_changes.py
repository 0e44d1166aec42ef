"""What the git-based contracts share: reading a unified diff per file, globs over
paths, and the test-declaration patterns of `test_diff` and `test_count_baseline`.

Globs (`glob`, `exclude`, `test_file_pattern`) mean one thing in every contract: `*`
and `?` stay within one path segment, `**` spans segments (`dir/**`, `**/x`,
`a/**/b`), `[abc]` is a class; a pattern matches a path when it matches the whole
path or, for a pattern without `/`, its last segment (`*_test.go` matches
`pkg/x_test.go`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# Wave's defaults (Go): test files and the line that declares one test
DEFAULT_TEST_FILES = ("*_test.go",)
DEFAULT_TEST_FUNC = r"(?m)^[ \t]*func[ \t]+(Test|Example|Benchmark|Fuzz)[A-Za-z0-9_]*\b"


@dataclass
class FileDiff:
    """One file's part of a unified diff."""

    path: str  # the new path; the old one for a deleted file
    old_path: str | None = None
    added: list[str] = field(default_factory=list)  # changed lines, without the `+`
    removed: list[str] = field(default_factory=list)


_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def unquote(text: str) -> str:
    """A path as git prints it: C-quoted (`"a\\tb"`, octal bytes) when it has to be."""
    if not (len(text) >= 2 and text[0] == '"' and text[-1] == '"'):
        return text
    out, body, i = bytearray(), text[1:-1], 0
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in "01234567" and re.fullmatch(r"[0-7]{3}", body[i + 1 : i + 4]):
                out.append(int(body[i + 1 : i + 4], 8))
                i += 4
                continue
            out += _ESCAPES.get(nxt, nxt).encode()
            i += 2
            continue
        out += char.encode()
        i += 1
    return out.decode(errors="replace")


def _side(raw: str, prefix: str) -> str | None:
    """The path of a `--- a/x` / `+++ b/x` line (None for /dev/null)."""
    value = unquote(raw.rstrip("\n").split("\t")[0])
    if value == "/dev/null":
        return None
    return value[len(prefix) :] if value.startswith(prefix) else value


def _header_path(line: str) -> str:
    """The path in `diff --git a/X b/X` (used when the diff has no ---/+++ lines:
    binary files, mode changes, empty new files)."""
    rest = line[len("diff --git ") :]
    if rest.startswith('"'):
        end = rest.index('"', 1) if '"' in rest[1:] else len(rest)
        return _side(rest[: end + 1], "a/") or ""
    half = (len(rest) - 1) // 2  # `a/X b/X`: both halves are the same length
    if rest[half] == " " and rest[:half][2:] == rest[half + 1 :][2:]:
        return rest[2:half]
    return rest[2:].split(" b/")[0]


def parse_diff(text: str) -> list[FileDiff]:
    """The files of a `git diff` and the lines each gained and lost."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    in_hunk = False
    for line in text.split("\n"):
        if line.startswith("diff --git "):
            current = FileDiff(_header_path(line))
            files.append(current)
            in_hunk = False
        elif current is None:
            continue
        elif not in_hunk and line.startswith("--- "):
            current.old_path = _side(line[4:], "a/")
        elif not in_hunk and line.startswith("+++ "):
            new = _side(line[4:], "b/")
            current.path = new or current.old_path or current.path
        elif not in_hunk and line.startswith("rename to "):
            current.path = unquote(line[len("rename to ") :])
        elif line.startswith("@@"):
            in_hunk = True
        elif in_hunk and line.startswith("+"):
            current.added.append(line[1:])
        elif in_hunk and line.startswith("-"):
            current.removed.append(line[1:])
    return files


# ---------------------------------------------------------------------------- globs


@functools.lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """`pattern` (see the module docstring) as a regular expression over a whole path."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("(?:/.*)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def glob_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable glob, or None."""
    if not pattern.strip():
        return "an empty glob matches nothing"
    try:
        glob_regex(pattern)
    except re.error as exc:
        return f"glob {pattern!r} is invalid: {exc}"
    return None


def matches(path: str, patterns: Iterable[str]) -> bool:
    """True if any pattern matches `path` (the whole path, or its last segment for a
    pattern without `/`)."""
    name = path.rsplit("/", 1)[-1]
    for pattern in patterns:
        regex = glob_regex(pattern)
        if regex.fullmatch(path) or ("/" not in pattern and regex.fullmatch(name)):
            return True
    return False


# ---------------------------------------------------------------------- test patterns


def _as_list(value: Any) -> list[str] | None:
    if isinstance(value, str) and value.strip():
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def patterns_for_tests(
    files: list[str] | str | None, func: str | None, namespace: Mapping[str, Any]
) -> tuple[list[str], str]:
    """The test-file globs and test-declaration regex a contract uses: its own, else
    the manifest's `project.test_file_pattern` / `project.test_func_pattern`, else
    Wave's Go defaults."""
    project = namespace.get("project")
    project = project if isinstance(project, Mapping) else {}
    globs = _as_list(files) or _as_list(project.get("test_file_pattern")) or [*DEFAULT_TEST_FILES]
    regex = func or project.get("test_func_pattern") or DEFAULT_TEST_FUNC
    return globs, str(regex)


def regex_problem(pattern: str) -> str | None:
    """Why `pattern` is not a usable test-declaration regex, or None."""
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"test_func_pattern {pattern!r} is not a valid regular expression: {exc}"
    return None


__all__ = [
    "DEFAULT_TEST_FILES",
    "DEFAULT_TEST_FUNC",
    "FileDiff",
    "glob_problem",
    "glob_regex",
    "matches",
    "parse_diff",
    "patterns_for_tests",
    "regex_problem",
    "unquote",
]
