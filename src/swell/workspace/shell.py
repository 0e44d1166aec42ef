"""Which shell runs a script: `sh`, or bash when the script uses a bash feature.

Wave runs command steps with `sh -c`, but its pipelines use bash features
(`set -o pipefail`, `<( )`, `[[ ]]`) that dash, `sh` on Debian and Ubuntu, rejects.
So a script that appears to use one runs under bash; every other script runs under
`sh`, as Wave runs it. Not bash for everything: bash starts about 0.4 ms slower than
dash, which a loop of short command steps pays at every visit (docs/performance.md).
The patterns err towards bash: a false match costs that 0.4 ms, a miss is Wave's own
behaviour. Where there is no bash, a script that needs it is not run at all, with
the feature named, rather than failing halfway with a syntax error (docs/engine.md,
"Command steps"); where there is no `sh`, bash runs everything.
"""

from __future__ import annotations

import functools
import re
import shutil

# what `sh` (dash, busybox) cannot run: feature -> a pattern that finds it
BASH_ONLY = {
    "a bash shebang": re.compile(r"\A#![^\n]*\bbash\b"),
    "`set -o pipefail`": re.compile(r"\bpipefail\b"),
    "process substitution `<( )`": re.compile(r"(?<![<$])[<>]\("),
    "`[[ ]]`": re.compile(r"(?:^|[\s;&|(])\[\[\s"),
    "`== ` in a test": re.compile(r"(?:^|[\s;&|(])(?:\[|test)\s[^\n\]]*\s==\s"),
    "`$'…'` strings": re.compile(r"(?<![\w$])\$'"),
    "arrays": re.compile(r"(?:^|[\s;])(?:declare|local|typeset)\s+-[aA]\b|\b\w+=\("),
    "`function` definitions": re.compile(r"(?:^|[\s;])function\s+\w"),
    "bash builtins": re.compile(
        r"(?:^|[\s;&|])(?:shopt|source|declare|mapfile|readarray|let|select)\s"
    ),
    "`{a..b}` ranges": re.compile(r"\{\w+\.\.\w+\}"),
    "here-strings `<<<`": re.compile(r"<<<"),
    "`&>` or `|&` redirections": re.compile(r"&>|\|&"),
    "`(( ))` arithmetic commands": re.compile(r"(?:^|[\s;&|])\(\("),
    "bash parameter expansions": re.compile(r"\$\{(?:!\w|\w+(?:/|:-?\d|\^|,))"),
    "`$RANDOM`/`$BASH…` variables": re.compile(r"\$\{?(?:RANDOM|BASH\w*|PIPESTATUS)\b"),
}


@functools.lru_cache(maxsize=256)
def _features(script: str) -> tuple[str, ...]:
    return tuple(name for name, pattern in BASH_ONLY.items() if pattern.search(script))


def bash_features(script: str) -> list[str]:
    """The bash-only features a script appears to use."""
    return list(_features(script))


@functools.lru_cache(maxsize=32)
def _which(name: str, path: str | None) -> str | None:
    # asked at every visit of a command step; PATH rarely changes within a run
    return shutil.which(name, path=path)


def shell_for(script: str, path: str | None) -> tuple[list[str] | None, str | None]:
    """The command line that runs `script` (sh, or bash for a bash script), or None
    and why not."""
    needs = _features(script)
    sh = None if needs else _which("sh", path)
    if sh is not None:
        return [sh, "-c", script], None
    bash = _which("bash", path)
    if bash is not None:
        return [bash, "-c", script], None
    if needs:
        return None, (
            f"it needs bash (it uses {', '.join(needs)}), which is not on PATH; install "
            "bash, or write the script for `sh`"
        )
    return None, "neither sh nor bash is on PATH"


__all__ = ["BASH_ONLY", "bash_features", "shell_for"]
