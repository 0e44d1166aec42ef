"""Where a `{{ }}` placeholder sits in a shell script, as far as swell needs to know.

`read_script(src, holes)` reads a script the way `sh`/`bash` tokenise it and says, for
each hole (a zero-width position where a value will go), how the value must be
written: `word` (unquoted: `"${V}"`), `double` (inside "…": `${V}`), `single` (inside
'…': close, `"${V}"`, reopen) or `comment` (never read). Everywhere else it raises
`ShellRefusal`: heredoc bodies, arithmetic, `${ … }` operators, backticks, `[[ ]]`,
the command name, arguments of commands that run their arguments (`eval`, `sh -c`,
`python3 -c`, …), variable names, and anything this lexer does not understand.
docs/security.md ("Templates are never code") is the user-facing rule.

Why a hand-written lexer and not a shell grammar (e.g. tree-sitter-bash): a
grammar built for editors recovers from what it cannot parse and still returns a
tree, and tree-sitter-bash 0.25 mis-reads `<<'E'OF` (quote removal on the delimiter),
so "it parsed" would not mean "the shell reads it this way". Placing values needs the
opposite property: know exactly the few contexts where a value is data, and refuse
the rest. This lexer follows POSIX token recognition (quotes, `$( )`, `$(( ))`, `${ }`,
backticks, comments, operators, heredocs with full quote removal on the delimiter,
reserved words at command position, `case` patterns) and raises on anything outside
that, so a mistake in it refuses a script instead of mis-quoting a value. It only runs
on scripts that have a value to place.

It also collects, as warnings, values assigned to a variable that the script then
uses where bash evaluates a variable's *value* as code (`$(( n ))`, `[[ $n -eq 1 ]]`,
`${a[n]}`, `declare -i n`, `${!n}`, `read "$n"`): a flow through a variable, which
swell can see only when it is direct.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from swell.templates import shell_rules as rules
from swell.templates.shell_rules import Guard, ShellRefusal, ShellView, Word

__all__ = ["ShellRefusal", "ShellView", "read_script"]

OPENERS = ("{", "!", "if", "then", "else", "elif", "do", "while", "until")
CLOSERS = ("}", "fi", "done")


def read_script(src: str, holes: Sequence[int]) -> ShellView:
    """How each hole (a position in `src`, in order) must be written; raises ShellRefusal."""
    return _Lexer(src, holes).run()


@dataclass
class _Frame:
    closer: str | None  # ")" for $( ), <( ), ( ); None for the script itself
    guard: Guard | None  # the enclosing word's role, applied to every value inside
    mode: str = "cmd"  # cmd, args, after, case-subject, case-in, pattern, for-*, func-name
    words: list[Word] = field(default_factory=list)  # the simple command's name and args
    word: Word | None = None
    redirect: bool = False  # the next word is a redirection's target
    cases: int = 0
    for_name: str = ""
    cmd_holes: list[int] = field(default_factory=list)


class _Lexer:
    def __init__(self, src: str, holes: Sequence[int]) -> None:
        self.src, self.n = src, len(src)
        self.at: dict[int, list[int]] = {}
        for k, pos in enumerate(holes):
            self.at.setdefault(pos, []).append(k)
        self.count = len(holes)
        self.contexts: dict[int, str] = {}
        self.open_words: list[Word] = []
        self.pending: list[tuple[str, bool, bool]] = []  # heredocs: delimiter, quoted, <<-
        self.owner: _Frame | None = None
        self.tainted: dict[str, int] = {}  # variable -> the hole whose value it holds
        self.as_code: set[str] = set()  # variables whose value bash may evaluate
        self.as_code_unknown = False

    def run(self) -> ShellView:
        self._commands(0, _Frame(None, None))
        if len(self.contexts) != self.count:  # pragma: no cover - every position is visited
            raise ShellRefusal(0, rules.lost("a value the lexer did not reach"))
        warnings = [
            (hole, name)
            for name, hole in self.tainted.items()
            if name in self.as_code or self.as_code_unknown
        ]
        return ShellView(
            tuple(self.contexts[k] for k in range(self.count)), tuple(sorted(warnings))
        )

    # ------------------------------------------------------------------ values

    def _place(self, pos: int, context: str, guard: Guard | None) -> None:
        for hole in self.at.get(pos, ()):
            if hole in self.contexts:
                continue
            if guard is not None:
                raise ShellRefusal(pos, guard, hole)
            self.contexts[hole] = context
            if context != "comment":
                for w in self.open_words:
                    w.holes.append(hole)
                    w.expansion()

    def _refuse_in(self, start: int, end: int, guard: Guard) -> None:
        """Refuse any value at a position in [start, end]."""
        for pos in range(start, end + 1):
            if pos in self.at:
                raise ShellRefusal(pos, guard, self.at[pos][0])

    def _lost(self, pos: int, what: str) -> ShellRefusal:
        return ShellRefusal(pos, rules.lost(what))

    def _no_break(self, start: int, end: int) -> None:
        if self.pending and "\n" in self.src[start:end]:
            raise self._lost(start, "a line break inside a quote on a line that starts a heredoc")

    # ------------------------------------------------------------- commands

    def _commands(self, i: int, frame: _Frame) -> int:
        src, n = self.src, self.n
        while True:
            if i in self.at:
                self._word(frame, i)
                self._place(i, "word", frame.guard or self._role(frame))
            if i >= n:
                if frame.closer:
                    raise self._lost(i, "a $( or ( that is never closed")
                self._end_word(frame, i)
                self._end_command(frame, i, newline=True)
                if self.pending:
                    raise self._lost(i, "a heredoc without its body")
                return i
            c = src[i]
            if c == ")" and frame.closer == ")":
                if self._end_word(frame, i) != i:
                    raise self._lost(i, "[[ without ]]")
                if frame.mode != "pattern":  # (the end of a case pattern is not ours)
                    self._end_command(frame, i)
                    if self.pending and self.owner is frame:
                        raise self._lost(i, "a heredoc in $( ) whose body is not before the )")
                    return i + 1
            if c in rules.META:
                i = self._operator(i, frame)
            elif c == "#" and frame.word is None:
                end = src.find("\n", i)
                end = n if end < 0 else end
                for pos in range(i + 1, end + 1):
                    self._place(pos, "comment", None)
                i = end
            elif c == "\\" and src.startswith("\\\n", i):
                self._refuse_in(i + 1, i + 1, rules.BACKSLASH)
                i += 2  # a line continuation
            else:
                w = self._word(frame, i)
                if c == "\\":
                    self._refuse_in(i + 1, i + 1, rules.BACKSLASH)
                    if i + 1 >= n:
                        raise self._lost(i, "a backslash at the end of the script")
                    w.quoted(src[i + 1])
                    i += 2
                elif c in "'\"`$":
                    i = self._quoted(i, frame.guard or self._role(frame), w)
                else:
                    w.add(c)
                    i += 1

    def _word(self, frame: _Frame, i: int) -> Word:
        if frame.word is None:
            frame.word = Word(i)
            self.open_words.append(frame.word)
        return frame.word

    def _role(self, frame: _Frame) -> Guard | None:
        """Why no value may go into the word being read (None: it may)."""
        if frame.redirect:
            return None
        bare = frame.word.bare if frame.word else ""
        if frame.mode == "cmd":
            if rules.ASSIGN.match(bare):
                return rules.assignment_guard(bare)
            return rules.SUBSCRIPT if rules.IN_SUBSCRIPT.fullmatch(bare) else rules.COMMAND
        if frame.mode == "args":
            return rules.arg_guard(frame.words, frame.word)
        return None if frame.mode in ("case-subject", "pattern", "for-words") else rules.PLACE

    def _operator(self, i: int, frame: _Frame) -> int:
        src, w = self.src, frame.word
        c = src[i]
        if (
            c in "<>"
            and w is not None
            and not frame.redirect
            and w.plain
            and (w.bare.isdigit() or rules.FD_NAME.fullmatch(w.bare))
        ):
            frame.word = None  # an fd number (2>) or {fd}>: part of the redirection
            self.open_words.pop()
        elif c == "(" and w is not None and w.plain and rules.ASSIGN.fullmatch(w.bare):
            if frame.mode == "cmd" or (
                frame.mode == "args" and frame.words[0].text in rules.DECLARATIONS
            ):
                w.expansion()
                return self._array(i + 1, w)
        elif c in "<>" and src.startswith("(", i + 1):  # <( ) >( ) process substitution
            self._refuse_in(i + 1, i + 1, rules.SPLIT)
            guard = frame.guard or self._role(frame)
            self._word(frame, i).expansion()
            return self._commands(i + 2, _Frame(")", guard))
        j = self._end_word(frame, i)
        if j != i:
            return j
        if c in " \t":
            return i + 1
        if c == "\n":
            self._end_command(frame, i, newline=True)
            return self._bodies(i + 1, frame)
        if c == ";":
            size = 3 if src.startswith(";;&", i) else 2 if src.startswith((";;", ";&"), i) else 1
            self._refuse_in(i + 1, i + size - 1, rules.SPLIT)
            self._end_command(frame, i)
            if size > 1:
                if not frame.cases:
                    raise self._lost(i, ";; outside a case")
                frame.mode = "pattern"
            return i + size
        if c in "&|":
            if c == "|" and frame.mode == "pattern":
                return i + 1
            if src.startswith(("&>>", "&>"), i):
                size = 3 if src.startswith("&>>", i) else 2
                self._refuse_in(i + 1, i + size - 1, rules.SPLIT)
                frame.redirect = True
                return i + size
            size = 2 if src.startswith(("&&", "||", "|&"), i) else 1
            self._refuse_in(i + 1, i + size - 1, rules.SPLIT)
            self._end_command(frame, i)
            return i + size
        if c == "(":
            return self._paren(i, frame)
        if c == ")":
            if frame.mode != "pattern":
                raise self._lost(i, "a ) that closes nothing")
            frame.mode = "cmd"
            return i + 1
        # redirections
        if src.startswith("<<<", i):
            self._refuse_in(i + 1, i + 2, rules.SPLIT)
            frame.redirect = True
            return i + 3
        if src.startswith("<<", i):
            size = 3 if src.startswith("<<-", i) else 2
            self._refuse_in(i + 1, i + size - 1, rules.SPLIT)
            return self._delimiter(i + size, frame, strip=size == 3)
        size = 2 if src.startswith((">>", ">|", ">&", "<&", "<>"), i) else 1
        self._refuse_in(i + 1, i + size - 1, rules.SPLIT)
        frame.redirect = True
        return i + size

    def _paren(self, i: int, frame: _Frame) -> int:
        src = self.src
        if src.startswith("((", i):
            self._refuse_in(i + 1, i + 1, rules.ARITH)
        if frame.mode == "for-name" and src.startswith("((", i):
            frame.mode = "for-do"
            return self._arith(i + 2)
        if frame.mode == "pattern":
            return i + 1  # the optional ( before a case pattern
        j = i + 1
        while j < self.n and src[j] in " \t":
            j += 1
        empty = j < self.n and src[j] == ")"
        if frame.mode == "args" and len(frame.words) == 1 and empty:
            self._refuse_in(i + 1, j, rules.SPLIT)
            frame.words, frame.mode = [], "cmd"  # NAME() : a function definition
            return j + 1
        if frame.mode != "cmd" or frame.words:
            raise self._lost(i, "a ( where a command cannot start")
        if src.startswith("((", i):
            frame.mode = "after"
            return self._arith(i + 2)
        if empty:  # `function f ()`
            self._refuse_in(i + 1, j, rules.SPLIT)
            return j + 1
        end = self._commands(i + 1, _Frame(")", frame.guard))
        frame.mode = "after"
        return end

    def _end_word(self, frame: _Frame, i: int) -> int:
        w = frame.word
        if w is None:
            return i
        frame.word = None
        self.open_words.pop()
        w.raw = self.src[w.start : i]
        frame.cmd_holes += w.holes
        if frame.redirect:
            frame.redirect = False
            return i
        mode = frame.mode
        if mode in ("cmd", "after"):
            if w.is_(*OPENERS):
                frame.mode = "cmd"
            elif w.is_(*CLOSERS) or (w.is_("esac") and frame.cases):
                frame.cases -= w.is_("esac")
                frame.mode = "after"
            elif mode == "after":
                raise self._lost(w.start, "a word after the end of a compound command")
            elif w.is_("case"):
                frame.mode = "case-subject"
            elif w.is_("for", "select"):
                frame.mode = "for-name"
            elif w.is_("function"):
                frame.mode = "func-name"
            elif w.is_("[["):
                frame.mode = "after"
                return self._dbracket(i)
            elif m := rules.ASSIGN.match(w.bare):
                if m.group(2):
                    self.as_code.update(rules.NAME.findall(m.group(2)))
                if w.holes:
                    self.tainted.setdefault(m.group(1), w.holes[0])
            else:
                frame.words.append(w)
                frame.mode = "args"
        elif mode == "args":
            frame.words.append(w)
        elif mode == "case-subject":
            frame.mode = "case-in"
        elif mode == "case-in" or mode == "for-do":
            if not w.is_("in" if mode == "case-in" else "do"):
                raise self._lost(w.start, f"`{w.raw}` where `in` or `do` belongs")
            frame.cases += mode == "case-in"
            frame.mode = "pattern" if mode == "case-in" else "cmd"
        elif mode == "pattern" and w.is_("esac"):
            frame.cases -= 1
            frame.mode = "after"
        elif mode == "for-name":
            frame.for_name, frame.mode = w.text, "for-in"
        elif mode == "for-in":
            if not w.is_("in", "do"):
                raise self._lost(w.start, f"`{w.raw}` where `in` or `do` belongs")
            frame.mode = "for-words" if w.is_("in") else "cmd"
        elif mode == "for-words" and w.holes:
            self.tainted.setdefault(frame.for_name, w.holes[0])
        elif mode == "func-name":
            frame.mode = "cmd"
        return i

    def _end_command(self, frame: _Frame, i: int, newline: bool = False) -> None:
        if frame.redirect:
            raise self._lost(i, "a redirection without its target")
        if frame.words:
            self._names(frame.words, frame.cmd_holes)
        frame.words, frame.cmd_holes = [], []
        mode = frame.mode
        if mode in ("cmd", "args", "after"):
            frame.mode = "cmd"
        elif mode in ("for-in", "for-words"):
            frame.mode = "for-do"
        elif mode in ("case-subject", "for-name", "func-name") and not newline:
            raise self._lost(i, f"a separator inside `{mode.split('-')[0]}`")

    def _names(self, words: list[Word], holes: list[int]) -> None:
        """Variables a command assigns from values, or whose value it reads as code."""
        name = words[0].text.rsplit("/", 1)[-1] if words[0].literal else ""
        args = words[1:]
        if name == "let":
            for w in args:
                self.as_code.update(rules.NAME.findall(w.raw))
        elif (
            name in rules.DECLARATIONS
            or name in rules.NAME_TAKERS
            or name in ("printf", "test", "[")
        ):
            options = [w.text for w in args if w.literal and w.text[:1] in "-+"]
            numeric = name in rules.DECLARATIONS and any(set(o[1:]) & set("in") for o in options)
            after_v = False
            for w in args:
                m = rules.ASSIGN.match(w.bare)
                target = m.group(1) if m else w.text if rules.NAME.fullmatch(w.text) else None
                takes = name in rules.NAME_TAKERS or name in rules.DECLARATIONS or after_v
                if takes and not (w.literal and w.text[:1] in "-+"):
                    self.as_code.update(rules.REF.findall(w.raw.split("=", 1)[0]))
                    if numeric and target is None:
                        self.as_code_unknown = True
                    if target and numeric:
                        self.as_code.add(target)
                    given = w.holes if m else holes  # NAME={{ v }}, or read NAME <<< {{ v }}
                    if target and given and (name != "printf" or after_v):
                        self.tainted.setdefault(target, given[0])
                after_v = w.text in ("-v", "-R") and w.literal

    # ---------------------------------------------------------------- quotes

    def _quoted(self, i: int, guard: Guard | None, w: Word) -> int:
        """A quote or expansion at `i` (', ", `, $); returns where it ends."""
        c = self.src[i]
        if c == "'":
            end = self.src.find("'", i + 1)
            if end < 0:
                raise self._lost(i, "a ' that is never closed")
            self._no_break(i, end)
            for pos in range(i + 1, end + 1):
                self._place(pos, "single", guard)
            w.quoted(self.src[i + 1 : end])
            return end + 1
        if c == '"':
            return self._double(i + 1, guard, w, "double")
        if c == "`":
            end = i + 1
            while end < self.n and self.src[end] != "`":
                end += 2 if self.src[end] == "\\" else 1
            if end >= self.n:
                raise self._lost(i, "a ` that is never closed")
            self._refuse_in(i + 1, end, rules.BACKTICKS)
            self._no_break(i, end)
            w.expansion()
            return end + 1
        return self._dollar(i, guard, w, in_double=False)

    def _double(self, j: int, guard: Guard | None, w: Word, context: str) -> int:
        src, text = self.src, list[str]()
        while True:
            self._place(j, context, guard)
            if j >= self.n:
                raise self._lost(j, 'a " that is never closed')
            c = src[j]
            if c == '"':
                w.quoted("".join(text))
                return j + 1
            if c == "\\":
                self._refuse_in(j + 1, j + 1, rules.BACKSLASH)
                if j + 1 < self.n and src[j + 1] in '$`"\\\n':
                    text.append(src[j + 1] if src[j + 1] != "\n" else "")
                    j += 2
                    continue
            if c == "$":
                j = self._dollar(j, guard, w, in_double=True)
                continue
            if c == "`":
                j = self._quoted(j, guard, w)
                continue
            if c == "\n" and self.pending:
                raise self._lost(j, "a line break inside quotes on a line that starts a heredoc")
            text.append(c)
            j += 1

    def _dollar(self, i: int, guard: Guard | None, w: Word, in_double: bool) -> int:
        src = self.src
        self._refuse_in(i + 1, i + 1, rules.BACKSLASH)
        nxt = src[i + 1 : i + 2]
        if not nxt or nxt in " \t\n;&|<>)" or (nxt == '"' and in_double):
            w.add("$") if not in_double else None
            return i + 1
        w.expansion()
        if src.startswith("$((", i):
            self._refuse_in(i + 2, i + 2, rules.ARITH)
            return self._arith(i + 3)
        if nxt == "(":
            return self._commands(i + 2, _Frame(")", guard))
        if nxt == "{":
            return self._param(i + 2, in_double)
        if nxt == "'":
            end = i + 2
            while end < self.n and src[end] != "'":
                if src.startswith("\\'", end):
                    raise self._lost(i, "$'…' with \\', which sh and bash read differently")
                end += 2 if src[end] == "\\" else 1
            if end >= self.n:
                raise self._lost(i, "a $' that is never closed")
            self._refuse_in(i + 2, end, rules.ANSI)
            return end + 1
        if nxt == '"':
            return self._double(i + 2, rules.ANSI, w, "double")
        if nxt.isdigit() or nxt in "@*#?$!-":
            return i + 2
        j = i + 1
        while j < self.n and (src[j].isalnum() or src[j] == "_") and j not in self.at:
            j += 1
        if j == i + 1:  # `$` before a character that starts nothing: a literal $
            w.add("$")
        return j

    # ----------------------------------------------------- refused regions

    def _scan(self, j: int, guard: Guard, stop: str, what: str, in_double: bool = False) -> int:
        """Skip a region where values are refused, up to the character `stop` (not
        in a quote or expansion); returns its position."""
        src, dummy, depth = self.src, Word(j), 0
        while True:
            self._refuse_in(j, j, guard)
            if j >= self.n:
                raise self._lost(j, f"{what} that is never closed")
            c = src[j]
            if c == stop and depth == 0:
                return j
            if c == "\\":
                self._refuse_in(j + 1, j + 1, guard)
                j += 2
                continue
            if c in "'\"`$":
                if c == "'" and in_double:
                    raise self._lost(j, "' inside ${ } inside double quotes")
                j = self._quoted(j, guard, dummy)
                continue
            if c == "\n" and self.pending:
                raise self._lost(j, "a line break on a line that starts a heredoc")
            if stop == ")" and c in "()":
                depth += 1 if c == "(" else -1
            j += 1

    def _param(self, i: int, in_double: bool) -> int:
        end = self._scan(i, rules.PARAM, "}", "a ${", in_double)
        body = self.src[i:end]
        name = rules.NAME.match(body.lstrip("!#"))
        if body.startswith("!") and name:
            self.as_code.add(name.group(0))  # ${!n}: n's value is a name
        rest = body[name.end() :] if name else body
        if rest.startswith("[") or (rest.startswith(":") and rest[1:2] not in "-=?+"):
            self.as_code.update(rules.NAME.findall(rest))
        return end + 1

    def _arith(self, i: int) -> int:
        end = self._scan(i, rules.ARITH, ")", "a $(( or ((")
        if not self.src.startswith("))", end):
            raise self._lost(end, "arithmetic that does not end with ))")
        self.as_code.update(rules.NAME.findall(self.src[i:end]))
        return end + 2

    def _array(self, i: int, w: Word) -> int:
        return self._scan(i, rules.ARRAY, ")", "an array ( … )") + 1

    def _dbracket(self, i: int) -> int:
        src, j = self.src, i
        while True:
            self._refuse_in(j, j, rules.DBRACKET)
            if j >= self.n:
                raise self._lost(i, "a [[ that is never closed")
            if (
                src.startswith("]]", j)
                and src[j - 1] in " \t\n"
                and (j + 2 >= self.n or src[j + 2] in rules.META)
            ):
                break
            if src[j] in "'\"`$":
                j = self._quoted(j, rules.DBRACKET, Word(j))
            elif src[j] == "\\":
                self._refuse_in(j + 1, j + 1, rules.DBRACKET)
                j += 2
            else:
                if src[j] == "\n" and self.pending:
                    raise self._lost(j, "a line break on a line that starts a heredoc")
                j += 1
        if rules.ARITH_TEST.search(src[i:j]):
            self.as_code.update(rules.NAME.findall(src[i:j]))
        return j + 2

    # -------------------------------------------------------------- heredocs

    def _delimiter(self, i: int, frame: _Frame, strip: bool) -> int:
        """Read a heredoc's delimiter word (quote removal as the shell does it)."""
        j = i
        while j < self.n and self.src[j] in " \t":
            j += 1
        self._refuse_in(i, j, rules.DELIMITER)
        found = rules.delimiter_word(self.src, j)
        if isinstance(found, str):
            raise self._lost(j, found)
        text, quoted, end = found
        self._refuse_in(i, end, rules.DELIMITER)
        if self.pending and self.owner is not frame:
            raise self._lost(i, "heredocs in nested commands on one line")
        self.pending.append((text, quoted, strip))
        self.owner = frame
        return end

    def _bodies(self, i: int, frame: _Frame) -> int:
        """After a newline: read the bodies of the heredocs started on that line."""
        if not self.pending:
            return i
        if self.owner is not frame:
            raise self._lost(i - 1, "a heredoc whose command goes on past its line")
        for delimiter, quoted, strip in self.pending:
            end = rules.heredoc_end(self.src, i, delimiter, quoted, strip)
            if end is None:  # the shell reads the rest of the script as its body
                self._refuse_in(i, self.n, rules.HEREDOC)
                raise self._lost(i, f"a heredoc with no line {delimiter!r} ending it")
            self._refuse_in(i, end, rules.HEREDOC)
            i = min(end + 1, self.n)
        self.pending, self.owner = [], None
        return i
