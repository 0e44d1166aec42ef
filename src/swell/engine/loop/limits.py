"""Visit limits and the circuit breaker's error normalization.

The breaker stops a step that keeps failing *the same way*. `normalize_error` turns an
error into its key: incidental parts (times, ids, temp paths, line numbers, durations,
most numbers) are removed, so the same failure at another time or place compares
equal. Two kinds of detail are kept, because when they change the loop is moving:

- failure counts: the number of failing tests, errors or problems a tool reports
  (`3 failed`, `2 tests failed`, `Found 3 errors`, `failures=2`, `Failures: 2`);
- the names of what fails: identifiers with digits (`test_case_2`, `E501`) and the
  parameters of a parametrized test (`test_div[3-0]`).

So `3 tests failed`, `2 tests failed`, `1 test failed` are three different keys (the
loop is converging), while `3 tests failed` three times in a row trips the breaker.
docs/engine.md states the rule.
"""

from __future__ import annotations

import functools
import re

# words after a count that say the count is of failures
_FAILURE_WORDS = r"(?:failed|failing|fails?|failures?|errors?|errored|problems?|broken)"
# `<n> failed`, `<n> tests failed`, `<n> unit tests failing`: up to two words between
_COUNT_BEFORE = re.compile(
    rf"(?<![\w.])(\d+)((?:\s+[A-Za-z][A-Za-z-]*){{0,2}}\s+{_FAILURE_WORDS})\b", re.IGNORECASE
)
# `3 of 10 tests failed`, `3/10 failed`
_COUNT_OF = re.compile(
    rf"(?<![\w.])(\d+)(\s*(?:of|/)\s*\d+(?:\s+[A-Za-z][A-Za-z-]*){{0,2}}\s+{_FAILURE_WORDS})\b",
    re.IGNORECASE,
)
# `failures=2`, `errors: 1`, `Failures: 2` (a plural: `error: 3` is no count)
_COUNT_AFTER = re.compile(
    r"\b((?:failures|errors|failed|failing|problems)\s*[=:]\s*)(\d+)\b", re.IGNORECASE
)
# the parameters of a parametrized test: `test_div[3-0]`
_PARAMS = re.compile(r"(?<=\w)\[([^\]\s]{1,80})\]")
# kept numbers are wrapped in these while the other patterns run
_OPEN, _CLOSE = "\x02", "\x03"


def _keep(match: re.Match[str], group: int) -> str:
    text = match.group(0)
    start, end = match.start(group) - match.start(), match.end(group) - match.start()
    return text[:start] + _OPEN + text[start:end] + _CLOSE + text[end:]


def _keep_params(match: re.Match[str]) -> str:
    inner = re.sub(r"\d+", lambda m: _OPEN + m.group(0) + _CLOSE, match.group(1))
    return f"[{inner}]"


_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # ISO timestamps and clock times
    (
        re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"),
        "<ts>",
    ),
    (re.compile(r"\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b"), "<time>"),
    # UUIDs, long hex ids and 0x addresses
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
    ),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{7,}\b"), "<hex>"),
    # temp paths
    # (only at the start of a path: a project's own `app/tmp/` is not a temp dir)
    (re.compile(r"(?<![\w.~/-])(?:/private)?/(?:tmp|var/folders|var/tmp)/[^\s:'\"]*"), "<tmp>"),
    (re.compile(r"[A-Za-z]:\\[^\s:'\"]*\\Temp\\[^\s:'\"]*"), "<tmp>"),
    # file:line:col and "line N"
    (re.compile(r":\d+(?::\d+)?\b"), ":<n>"),
    (re.compile(r"\b(line|col|column)\s+\d+", re.IGNORECASE), r"\1 <n>"),
]
# durations and any other number, except digits that are part of a name (`test_case_2`)
# or kept above (failure counts, test parameters)
_NUMBERS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"(?<![{_OPEN}\d])\b\d+(?:\.\d+)?\s*(?:ms|s|sec|seconds|m|min)\b"), "<dur>"),
    (re.compile(rf"(?<![A-Za-z_\d{_OPEN}])\d+(?:\.\d+)?"), "<n>"),
]


@functools.lru_cache(maxsize=128)
def normalize_error(message: str, limit: int = 2000) -> str:
    """The error with its incidental parts removed, so the same failure compares equal;
    failure counts and failing names stay (see the module docstring). Kept for the
    errors seen last: a loop failing the same way asks again each visit (fifteen
    patterns over up to 4,000 characters)."""
    text = message[-limit * 2 :].replace(_OPEN, "").replace(_CLOSE, "")
    for pattern, repl in _PATTERNS:
        text = pattern.sub(repl, text)
    text = _PARAMS.sub(_keep_params, text)
    text = _COUNT_OF.sub(lambda m: _keep(m, 1), text)
    text = _COUNT_BEFORE.sub(lambda m: _keep(m, 1), text)
    text = _COUNT_AFTER.sub(lambda m: _keep(m, 2), text)
    for pattern, repl in _NUMBERS:
        text = pattern.sub(repl, text)
    text = text.replace(_OPEN, "").replace(_CLOSE, "")
    # lower case, as Wave's fingerprint (`Error:` and `error:` are the same failure)
    lines = [" ".join(line.split()).lower() for line in text.splitlines()]
    return "\n".join(line for line in lines if line)[-limit:]


# What a step.finished keeps of a visit's text: a step kind may put text a step wrote
# into its tail or error (a branch's value read from a 50 MiB artifact), and every
# event is stored, replayed and shown; the whole output is in the output table.
TAIL_KEPT = 64 * 1024  # characters of the end of `output_tail`
ERROR_KEPT = 16 * 1024  # characters of the start of `error`


def kept_tail(text: str | None) -> str | None:
    if text is None or len(text) <= TAIL_KEPT:
        return text
    return f"… ({len(text) - TAIL_KEPT:,} characters before)" + text[-TAIL_KEPT:]


def kept_error(text: str | None) -> str | None:
    if text is None or len(text) <= ERROR_KEPT:
        return text
    return text[:ERROR_KEPT] + f"… ({len(text) - ERROR_KEPT:,} more characters)"
