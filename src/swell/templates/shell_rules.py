"""What swell refuses, and why: the guards and the per-command rules `shell.py` applies.

A guard is a pair (why no value may go here, how to write the script instead); the
message a user sees is `{{ placeholder }} <why>. Fix: <how>` (docs/security.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

Guard = tuple[str, str]  # (why no value may go here, how to write the script instead)

META = " \t\n;&|()<>"
ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\[[^\]]*\])?\+?=")
IN_SUBSCRIPT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[^\]]*")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
REF = re.compile(r"\$\{?!?([A-Za-z_][A-Za-z0-9_]*)")
FD_NAME = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
ARITH_TEST = re.compile(r"(^|\s)-(eq|ne|lt|le|gt|ge|v|R)(\s|$)")
_PYTHON = re.compile(r"(python|pypy)(\d+(\.\d+)?)?")

ENV_FIX = (
    "hand the value over in the environment instead: `NAME={value} {example}`, and read "
    'it there as data (os.environ["NAME"], process.env.NAME, $ENV{NAME}, "$NAME")'
)
HEREDOC: Guard = (
    "is inside a heredoc body: a heredoc is a document its command may run as code "
    "(python3 - <<'PY', sh <<EOF), so swell never puts values in one",
    ENV_FIX.replace("{example}", "python3 - <<'PY'"),
)
ARITH: Guard = (
    "is inside arithmetic ($(( )), (( )), let), which the shell evaluates as code",
    'do the arithmetic with expr, which reads numbers as data: `expr "$N" + 1` after N={value}',
)
PARAM: Guard = (
    "is inside ${ … }, where the shell reads it as a pattern, an offset or a name",
    'assign it first (`v={value}`) and use "$v" in a quoted word, e.g. ${x#"$v"}',
)
BACKTICKS: Guard = (
    "is inside backticks, whose text the shell parses a second time",
    "use $( … ) instead of backticks",
)
DBRACKET: Guard = (
    "is inside [[ … ]], where bash evaluates -eq/-lt/-v operands as code",
    "use [ … ] (test) instead of [[ … ]]",
)
COMMAND: Guard = (
    "would be the command to run (the command name)",
    "write a fixed command and pass the value as an argument, e.g. `printf '%s\\n' {value}`",
)
SUBSCRIPT: Guard = (
    "is an array subscript, which bash evaluates as arithmetic code",
    "use a fixed subscript and put the value on the right of `=`",
)
PLACE: Guard = (
    "is in a place of the shell grammar where swell does not put values",
    "use it as an argument, an assignment value (NAME={value}) or inside quotes",
)
ANSI: Guard = (
    "is inside $'…' or $\"…\", which sh and bash read differently",
    "use plain '…' or \"…\" quotes",
)
DELIMITER: Guard = ("is part of a heredoc delimiter", "use a fixed delimiter word")
ARRAY: Guard = (
    "is inside an array assignment ( … ), where bash reads subscripts as code",
    "assign the value to a plain variable: NAME={value}",
)
BACKSLASH: Guard = (
    "comes right after a backslash or a $, which would change how its value is quoted",
    "remove the backslash or $ in front of the placeholder",
)
SPLIT: Guard = ("splits a shell operator", "put the placeholder between words")


def _eval(name: str) -> Guard:
    program = name.split(" ", 1)[0]
    if program == "let":
        return ARITH
    if program in EVALUATORS:
        return (
            f"is an argument of `{name}`, which runs its arguments as code",
            "never run a value as code: pass it to a command as an argument or in a "
            'variable (`v={value}`) that the code reads as "$v"',
        )
    return (
        f"is an argument of `{name}`, which runs its arguments as code",
        ENV_FIX.replace("{example}", f"{name} '…'"),
    )


def _script(name: str) -> Guard:
    return (
        f"would be an option or the script of `{name}`, which runs code",
        f"write `{name}`'s options and script (or its path) first and values after them, "
        "or hand values over in the environment: NAME={value}",
    )


def _wrapped(name: str) -> Guard:
    return (
        f"would name the program `{name}` runs, or one of `{name}`'s options",
        f"write `{name}`'s options and the program first, and values after them",
    )


def _varname(name: str) -> Guard:
    return (
        f"would be a variable name for `{name}`, and bash evaluates subscripts in names as code",
        "pass values as assignment values (NAME={value}) or here-strings, never as names",
    )


def _decl(name: str) -> Guard:
    return (
        f"is an argument of `{name}` with options, which can make bash evaluate it (-i, -n)",
        f"assign without options: `{name} NAME={{value}}`",
    )


# variables the shell (PS4 with set -x, BASH_ENV) or a program reads as code or as where
# to find code: a value is never assigned to them
CODE_VARIABLES = frozenset(
    [
        "PS0",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PROMPT_COMMAND",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PATH",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "LD_AUDIT",
        "PYTHONSTARTUP",
        "PYTHONPATH",
        "PYTHONHOME",
        "NODE_OPTIONS",
        "NODE_PATH",
        "PERL5OPT",
        "PERL5LIB",
        "PERLLIB",
        "RUBYOPT",
        "RUBYLIB",
        "GIT_SSH_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "GIT_PAGER",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "LESSOPEN",
        "SSH_ASKPASS",
        "SUDO_ASKPASS",
    ]
)


def assignment_guard(bare: str) -> Guard | None:
    """None when `bare` starts an assignment a value may complete (NAME=…), else why not."""
    m = ASSIGN.match(bare)
    if m is None:
        return PLACE
    if m.group(1) in CODE_VARIABLES:
        return (
            f"would be assigned to {m.group(1)}, which the shell or a program reads as code "
            "or as where to find code",
            "assign it to a variable of your own: NAME={value}",
        )
    return None


FORMAT: Guard = (
    "would be printf's format, an option or a variable name",
    "give printf options and a fixed format first: `printf '%s' {value}`",
)


def lost(what: str) -> Guard:
    return (
        f"cannot be placed: swell cannot tell how the shell reads this script ({what})",
        "simplify the script at that point (or move the code to a file the script runs "
        "with the value as an argument)",
    )


class ShellRefusal(Exception):
    """No value may go at `hole` (None: the lexer is lost at `pos`; name the first)."""

    def __init__(self, pos: int, guard: Guard, hole: int | None = None) -> None:
        super().__init__(guard[0])
        self.pos, self.reason, self.fix, self.hole = pos, guard[0], guard[1], hole


@dataclass(frozen=True)
class ShellView:
    contexts: tuple[str, ...]  # per hole: word, double, single, comment
    warnings: tuple[tuple[int, str], ...]  # (hole, message)


# command names with rules (docs/security.md lists them)
EVALUATORS = {"eval", "trap", "let", "alias"}
SHELLS = {"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh"}
INTERPRETER_FLAGS = {"shell": "c", "python": "c", "perl": "eE", "ruby": "e", "node": "ep"}
FLAG_ANYWHERE = {"su", "runuser"}  # `su user -c CODE`: options come after operands
DECLARATIONS = {"declare", "typeset", "local", "export", "readonly"}
NAME_TAKERS = {"read", "unset", "mapfile", "readarray", "getopts"}
# wrapper -> its options that take an argument; the program it runs comes after them
WRAPPERS: dict[str, frozenset[str]] = {
    "env": frozenset({"-u", "--unset", "-C", "--chdir"}),
    "exec": frozenset({"-a"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after"}),
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-R"}),
    "doas": frozenset({"-u", "-C"}),
    "xargs": frozenset({"-I", "-L", "-n", "-P", "-s", "-d", "-E", "-a"}),
    "setsid": frozenset(),
    "coproc": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
}


def _family(name: str) -> str | None:
    if name in SHELLS:
        return "shell"
    if _PYTHON.fullmatch(name):
        return "python"
    if name in ("node", "nodejs"):
        return "node"
    if name in ("perl", "ruby"):
        return name
    return "source" if name in (".", "source") else None


def _evaluates(family: str, option: str) -> bool:
    if family == "node" and option.split("=", 1)[0] in ("--eval", "--print"):
        return True
    letters = INTERPRETER_FLAGS.get(family, "")
    return option[1:2] != "-" and bool(set(option[1:]) & set(letters))


@dataclass
class Word:
    """A shell word being read: what its quote removal and role checks need."""

    start: int
    text: str = ""  # after quote removal
    bare: str = ""  # the unquoted literal prefix
    plain: bool = True  # no quote, escape, expansion or value so far
    literal: bool = True  # no expansion or value
    holes: list[int] = field(default_factory=list)
    raw: str = ""

    def add(self, ch: str) -> None:
        self.text += ch
        if self.plain:
            self.bare += ch

    def quoted(self, text: str) -> None:
        self.text += text
        self.plain = False

    def expansion(self) -> None:
        self.literal = self.plain = False

    def is_(self, *words: str) -> bool:
        return self.plain and self.literal and self.bare in words


def _short_option(w: Word) -> bool:
    return w.literal and len(w.text) > 1 and w.text[0] in "-+"


def _wrapped_index(words: list[Word], name: str) -> int | None:
    """Index of the program a wrapper runs, or None while it is not among `words`."""
    takes_arg, operands, options = WRAPPERS[name], int(name == "timeout"), True
    j = 1
    while j < len(words):
        w = words[j]
        if name == "env" and options and ASSIGN.match(w.bare):
            j += 1
            continue
        if not w.literal or (name == "env" and w.text.startswith(("-S", "--split"))):
            return None
        if options and w.text == "--":
            options = False
        elif options and _short_option(w):
            j += 1 if w.text not in takes_arg else 2
            continue
        elif operands:
            operands -= 1
        else:
            return j
        j += 1
    return None


def arg_guard(words: list[Word], cur: Word | None) -> Guard | None:
    """Why a value may not be the next argument (`cur`, words[len(words)]) of a command."""
    k, head = len(words), words[0]
    name = head.text.rsplit("/", 1)[-1] if head.literal else None
    if name is None:  # a computed program: refuse only after an -c/-e style option
        flags = any(_short_option(w) and set(w.text[1:]) & set("ce") for w in words[1:])
        return _eval(f"{head.raw} -c") if flags else None
    if name in WRAPPERS:
        j = _wrapped_index(words, name)
        if j is None:
            if name == "env" and cur is not None and ASSIGN.match(cur.bare):
                return assignment_guard(cur.bare)
            return _wrapped(name)
        return arg_guard(words[j:], cur)
    if name in EVALUATORS:
        return _eval(name)
    if name in FLAG_ANYWHERE:
        hit = any(_short_option(w) and "c" in w.text for w in words[1:])
        return _eval(f"{name} -c") if hit else None
    family = _family(name)
    if family is not None:
        options = True
        for w in words[1:]:
            if not w.literal:
                return _script(name)
            if options and w.text == "--":
                options = False
            elif options and _short_option(w):
                if _evaluates(family, w.text):
                    return _eval(f"{name} {w.text}")
            else:
                return None  # the script (or file) is fixed: what follows it is data
        return _script(name)
    if name in DECLARATIONS:
        if any(_short_option(w) for w in words[1:]):
            return _decl(name)
        if cur is not None and ASSIGN.match(cur.bare):
            return assignment_guard(cur.bare)
        return _varname(name)
    if name in NAME_TAKERS:
        return _varname(name)
    if name == "printf":
        j = 1
        while j < k:
            t = words[j].text
            if not words[j].literal:
                return FORMAT
            if t == "--":
                j += 1
                break
            if not t.startswith("-"):
                break
            j += 2 if t == "-v" else 1
        return None if j < k else FORMAT
    if name in ("test", "[") and k >= 2:
        prev = words[k - 1]
        if not prev.literal or prev.text in ("-v", "-R"):
            return _varname(name)
    return None


def delimiter_word(src: str, j: int) -> tuple[str, bool, int] | str:
    """A heredoc delimiter word at `j` after quote removal: (text, quoted, end), or
    why swell cannot read it. `'E'OF`, `"EOF"`, `\\EOF` and `E"O"F` all mean EOF, quoted."""
    start, text, quoted, n = j, [], False, len(src)
    cannot = "a heredoc delimiter swell cannot read"
    while j < n and src[j] not in META:
        c = src[j]
        if c == "'":
            end = src.find("'", j + 1)
            if end < 0 or "\n" in src[j:end]:
                return cannot
            text.append(src[j + 1 : end])
            quoted, j = True, end + 1
        elif c == '"':
            j += 1
            while j < n and src[j] != '"':
                if src[j] in "$`\n" or src.startswith("\\\n", j):
                    return cannot
                if src[j] == "\\" and src[j + 1 : j + 2] in ('"', "\\"):
                    j += 1
                text.append(src[j])
                j += 1
            if j >= n:
                return cannot
            quoted, j = True, j + 1
        elif c == "\\":
            if src[j + 1 : j + 2] in ("", "\n"):
                return cannot
            text.append(src[j + 1])
            quoted, j = True, j + 2
        elif c in "$`":
            return "a heredoc delimiter with $ or `"
        else:
            text.append(c)
            j += 1
    return ("".join(text), quoted, j) if j > start else "<< without a delimiter word"


def heredoc_end(src: str, i: int, delimiter: str, quoted: bool, strip: bool) -> int | None:
    """Where the line ending a heredoc body that starts at `i` ends (its newline, or the
    end of the script), or None when no line ends it."""
    n = len(src)
    while i < n:
        end = src.find("\n", i)
        end = n if end < 0 else end
        line = src[i:end]
        # an unquoted heredoc joins a line ending in an odd number of \ with the next
        while not quoted and end < n and (len(line) - len(line.rstrip("\\"))) % 2:
            nxt = src.find("\n", end + 1)
            nxt = n if nxt < 0 else nxt
            line, end = line[:-1] + src[end + 1 : nxt], nxt
        if (line.lstrip("\t") if strip else line) == delimiter:
            return end
        i = end + 1
    return None
