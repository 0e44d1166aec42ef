"""Agent output made inert and bounded before any page or API shows it.

Output comes from agents and commands: it may hold terminal escape codes, markup,
megabyte-long lines. Jinja's autoescape makes markup text; this strips escape and
control codes (a browser would show them as garbage, a terminal copy-paste could
replay them), shows bidi overrides as `\\u202e` (as `swell logs` does) rather than
let them reorder the text, and cuts long lines and long texts, saying how much was
left out.
"""

from __future__ import annotations

import re
from urllib.parse import quote

from swell.events.views import BIDI_CONTROLS

# CSI sequences, OSC sequences (ended by BEL or ST), and two-character escapes
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]")
# C0 controls except tab and newline, DEL, and C1 controls
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# the Unicode bidirectional overrides and isolates (events.views.BIDI_CONTROLS): shown
# as `\u202e`, as in a terminal
_BIDI = re.compile(f"[{BIDI_CONTROLS}]")

MAX_LINE = 2_000  # characters of one line shown
MAX_TEXT = 200_000  # characters of one text shown (its end, where output is freshest)


def strip_ansi(text: str) -> str:
    """`text` without escape sequences and control codes, its bidi controls made visible."""
    text = _CONTROL.sub("", _ANSI.sub("", text.replace("\r\n", "\n")))
    return _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _cut_line(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]} … [line cut: {len(line) - limit:,} more characters]"


def clean(text: str | None, max_line: int = MAX_LINE, max_text: int = MAX_TEXT) -> str:
    """`text` without escape codes, each line at most `max_line` characters and the
    whole at most about `max_text` (the end is kept), with a note where it was cut."""
    if not text:
        return ""
    note = ""
    if len(text) > max_text * 4:  # do not scan megabytes to show kilobytes
        note = f"[{len(text) - max_text * 4:,} earlier characters not shown]\n"
        text = text[-max_text * 4 :]
    text = strip_ansi(text)
    out = "\n".join(_cut_line(line, max_line) for line in text.split("\n"))
    if len(out) > max_text:
        note = f"[{len(out) - max_text:,} earlier characters not shown]\n"
        out = out[-max_text:]
    return note + out


def short(text: str | None, limit: int = 200) -> str:
    """One line of at most `limit` characters (for tables)."""
    one = clean(text, max_line=limit, max_text=limit * 2).replace("\n", " ")
    return one if len(one) <= limit else one[: limit - 1] + "…"


def path_part(value: str) -> str:
    """A value made one URL path segment: links are built only from our own routes and
    quoted ids, so a hostile id never becomes a `javascript:` or off-site link."""
    return quote(value, safe="")
