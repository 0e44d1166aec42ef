"""YAML loading that remembers where every value came from, for file:line:col errors.

Hostile files are refused early and cheaply, each with one located problem
(docs/security.md, "Hostile input"): a file over `MAX_BYTES`, bytes that are not UTF-8,
characters YAML does not allow (NUL, other control characters), nesting deeper than
`MAX_DEPTH`, and more than `MAX_VALUES` values once every alias is expanded (a "billion
laughs" file). The document is built from the parser's events with an explicit stack,
never by recursion, so neither deep nesting nor an alias inside the value it names
reaches Python's recursion limit or the C stack of libyaml's composer. An alias is not
copied: its value is shared, its expanded size is counted, and the source map sends
paths below it to the anchor's positions.
"""

from __future__ import annotations

import functools
import re
import stat
from pathlib import Path
from typing import NoReturn

from swell.errors import ManifestError, Problem
from swell.manifest.yamldoc import Pos, YamlDoc

# A Wave pipeline or manifest is a few kB; these are orders of magnitude above any real
# file and far below what costs noticeable time or memory (docs/security.md).
MAX_BYTES = 1024 * 1024  # size of a file

_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # YAML's line breaks


@functools.cache
def _not_allowed() -> re.Pattern[str]:
    """Characters a YAML 1.1 stream may not hold (what PyYAML's reader refuses); compiled
    when a file is first parsed (3 ms), not by every command that imports this."""
    return re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@functools.cache
def _ascii_not_allowed() -> re.Pattern[str]:
    """`_not_allowed` of ASCII text: the control characters but tab and line breaks."""
    return re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _line_col(text: str, index: int) -> Pos:
    """1-based line and column of `text[index]`, counting YAML's line breaks."""
    line, start = 1, 0
    for match in _BREAK.finditer(text, 0, index):
        line, start = line + 1, match.end()
    return line, index - start + 1


def _describe(char: str) -> str:
    if char == "\x00":
        return "a NUL byte (U+0000)"
    control = ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0
    return f"the {'control ' if control else ''}character U+{ord(char):04X}"


def check_text(text: str, file: str) -> None:
    """Refuse text too large to parse or holding characters YAML forbids, at their place."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        prefix = text.encode("utf-8", "surrogatepass")[:MAX_BYTES].decode("utf-8", "ignore")
        line, col = _line_col(prefix, len(prefix))
        raise ManifestError(
            [Problem(file, line, col, f"file is larger than {MAX_BYTES:,} bytes; not read")]
        )
    # most files are ASCII: their check is a class of 30 characters, which compiles
    # in microseconds; the whole of Unicode's class takes milliseconds
    bad = (_ascii_not_allowed() if text.isascii() else _not_allowed()).search(text)
    if bad is not None:
        line, col = _line_col(text, bad.start())
        message = f"{_describe(bad.group())} is not allowed in YAML (is this a binary file?)"
        raise ManifestError([Problem(file, line, col, message)])


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse one YAML document; syntax errors and hostile input become a ManifestError
    at their position."""
    check_text(text, file)
    from swell.manifest.yamlparse import parse  # PyYAML only when a file is parsed

    return parse(text, file)


def read_text(path: Path, display: str | None = None) -> str:
    """A manifest or pipeline file's text: a regular file, at most MAX_BYTES, UTF-8."""
    name = display or str(path)

    def refuse(message: str, line: int = 0, col: int = 0) -> NoReturn:
        raise ManifestError([Problem(name, line, col, message)])

    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            refuse("is a directory, not a YAML file")
        if not stat.S_ISREG(info.st_mode):
            refuse("is not a regular file")
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        refuse(f"cannot read file: {exc.strerror or exc}")
    except ValueError:  # a NUL in the path
        refuse("cannot read file: invalid file name")
    if len(raw) > MAX_BYTES:
        prefix = raw[:MAX_BYTES].decode("utf-8", "ignore")
        refuse(
            f"file is larger than {MAX_BYTES:,} bytes; not read", *_line_col(prefix, len(prefix))
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = raw[: exc.start].decode("utf-8", "replace")
        line, col = _line_col(prefix, len(prefix))
        refuse(f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})", line, col)


def load_yaml(path: Path, display: str | None = None) -> YamlDoc:
    """Read and parse a YAML file; an unreadable file is a ManifestError too."""
    name = display or str(path)
    return parse_yaml(read_text(path, name), name)
