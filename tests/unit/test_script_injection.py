"""Templates are never code: every context where a script may receive a value, against
hostile values, run for real with `sh` (and `bash`).

Each script writes what its command saw to `out`; the test asserts the exact bytes, no
output, and no side effect (no PWNED file). The contexts where a value is refused are
in test_script_injection_refusals.py.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from swell.templates.render import analyse_script, render_script

PAYLOADS: dict[str, str] = {
    "cmdsub": "$(touch PWNED)",
    "backticks": "`touch PWNED`",
    "single_quote": "'",
    "double_quote": '"',
    "newlines": "a\nb\n\nc",
    "trailing_newline": "x\n",
    "semicolon": "; touch PWNED",
    "and": "&& touch PWNED",
    "or": "|| touch PWNED",
    "pipe": "| touch PWNED",
    "redirect": "> PWNED",
    "glob": "*",
    "glob_class": "[a-z]*?",
    "tilde": "~",
    "tilde_user": "~root/x",
    "leading_dash": "-n",
    "long_option": "--help",
    "home": "$HOME",
    "braces": "${HOME} ${IFS}",
    "arithmetic": "$((6*7))",
    "subscript": "a[$(touch PWNED)]",
    "backslash": "\\",
    "escapes": "\\n \\\\ \\' \\\"",
    "python_break": '"); import os; os.system("touch PWNED"); print("',
    "shell_break_single": "'; touch PWNED; echo '",
    "shell_break_double": '"; touch PWNED; echo "',
    "delimiter_line": "EOF",
    "delimiter_lines": "x\nEOF\ntouch PWNED\nPY\nE'OF\n",
    "unicode": "héllo wörld ✓ 日本語 \u200b",
    "empty": "",
    "spaces": "  two  spaces\tand a tab  ",
    "hash": "# not a comment",
    "brace_expansion": "{a,b}",
    "printf_format": "%s %d %%",
    "assignment": "a=b",
}


def same(v: str) -> str:
    return v


def subst(v: str) -> str:  # what $( ) keeps: trailing newlines are removed
    return v.rstrip("\n")


@dataclass(frozen=True)
class Context:
    script: str
    expect: Callable[[str], str] = same
    bash_only: bool = False


PRINT = "printf '%s'"
CONTEXTS: dict[str, Context] = {
    # words and quotes
    "word": Context(f"{PRINT} {{{{ v }}}} > out"),
    "double_quotes": Context(f'{PRINT} "<{{{{ v }}}}>" > out', lambda v: f"<{v}>"),
    "single_quotes": Context(f"{PRINT} '<{{{{ v }}}}>' > out", lambda v: f"<{v}>"),
    "adjacent": Context(f"{PRINT} {{{{ v }}}}{{{{ v }}}} > out", lambda v: v + v),
    "word_affixes": Context(f"{PRINT} pre{{{{ v }}}}post > out", lambda v: f"pre{v}post"),
    "mixed_quotes": Context(
        f"{PRINT} a\"b{{{{ v }}}}c\"'d{{{{ v }}}}e'{{{{ v }}}} > out",
        lambda v: f"ab{v}cd{v}e{v}",
    ),
    "next_to_a_variable": Context(f'x=1; {PRINT} "$x{{{{ v }}}}$x" > out', lambda v: f"1{v}1"),
    "hash_after_value": Context(f"{PRINT} {{{{ v }}}}#x > out", lambda v: v + "#x"),
    "line_continuation": Context(f"{PRINT} \\\n  {{{{ v }}}} > out"),
    # assignments and the environment
    "assignment": Context(f'x={{{{ v }}}}; {PRINT} "$x" > out'),
    "assignment_affixes": Context(f'x=a{{{{ v }}}}b; {PRINT} "$x" > out', lambda v: f"a{v}b"),
    "assignment_double": Context(f'x="{{{{ v }}}}"; {PRINT} "$x" > out'),
    "assignment_single": Context(f"x='{{{{ v }}}}'; {PRINT} \"$x\" > out"),
    "export": Context(f'export X={{{{ v }}}}; {PRINT} "$X" > out'),
    "local": Context(f'f() {{ local x={{{{ v }}}}; {PRINT} "$x"; }}; f > out'),
    "env_prefix_sh": Context('X={{ v }} sh -c \'printf "%s" "$X"\' > out'),
    "env_wrapper": Context('env X={{ v }} sh -c \'printf "%s" "$X"\' > out'),
    "env_prefix_python_heredoc": Context(
        "X={{ v }} python3 - > out <<'PY'\n"
        'import os, sys\nsys.stdout.write(os.environ["X"])\nPY\n'
    ),
    "env_prefix_node": Context("X={{ v }} node -e 'process.stdout.write(process.env.X)' > out"),
    "env_prefix_perl": Context("X={{ v }} perl -e 'print $ENV{X}' > out"),
    "variable_for_eval": Context('X={{ v }}; eval \'printf "%s" "$X"\' > out'),
    # command substitutions
    "cmdsub_word": Context(f'{PRINT} "$({PRINT} {{{{ v }}}})" > out', subst),
    "cmdsub_double": Context(f'{PRINT} "a$({PRINT} "b{{{{ v }}}}c")d" > out', lambda v: f"ab{v}cd"),
    "cmdsub_single": Context(f"{PRINT} \"$({PRINT} '<{{{{ v }}}}>')\" > out", lambda v: f"<{v}>"),
    "cmdsub_nested": Context(f'{PRINT} "$({PRINT} "$({PRINT} {{{{ v }}}})")" > out', subst),
    "cmdsub_assignment": Context(f'x=$({PRINT} {{{{ v }}}}); {PRINT} "$x" > out', subst),
    "case_in_cmdsub": Context(f'{PRINT} "$(case x in x) {PRINT} {{{{ v }}}};; esac)" > out', subst),
    # compound commands
    "case": Context(
        f"case {{{{ v }}}} in {{{{ v }}}}) {PRINT} {{{{ v }}}} > out;; *) {PRINT} NO > out;; esac"
    ),
    "case_paren_pattern": Context(f"case a in (a) {PRINT} {{{{ v }}}} > out;; esac"),
    "for_words": Context(f'for a in {{{{ v }}}}; do {PRINT} "$a" >> out; done'),
    "test_brackets": Context(
        f'if [ "x"{{{{ v }}}} = x{{{{ v }}}} ]; then {PRINT} {{{{ v }}}} > out; fi'
    ),
    "elif": Context(f"if false; then :; elif true; then {PRINT} {{{{ v }}}} > out; fi"),
    "while": Context(f"while :; do {PRINT} {{{{ v }}}} > out; break; done"),
    "pipeline": Context(f"{PRINT} {{{{ v }}}} | cat > out"),
    "and_or": Context(f"false || {PRINT} {{{{ v }}}} > out"),
    "subshell": Context(f"({PRINT} {{{{ v }}}}) > out"),
    "group": Context(f"{{ {PRINT} {{{{ v }}}}; }} > out"),
    "function_argument": Context(f'f() {{ {PRINT} "$1"; }}; f {{{{ v }}}} > out'),
    # programs given values as data
    "sh_script_argument": Context(
        f'{PRINT} \'printf "%s" "$1"\' > s.sh; sh s.sh {{{{ v }}}} > out'
    ),
    "python_script_argument": Context(
        f"{PRINT} 'import sys; sys.stdout.write(sys.argv[1])' > s.py; python3 s.py {{{{ v }}}} > out"
    ),
    "timeout_wrapper": Context(f"timeout 5 {PRINT} {{{{ v }}}} > out"),
    "printf_dashdash": Context("printf -- '%s' {{ v }} > out"),
    # values after constructs the old quote tracker mis-read
    "after_quoted_delimiter_E_OF": Context(
        f"cat <<'E'OF > /dev/null\n$(touch PWNED)\nEOF\n{PRINT} {{{{ v }}}} > out"
    ),
    "after_quoted_delimiters": Context(
        'cat <<"EOF" >/dev/null\nx\nEOF\ncat <<\\EOF >/dev/null\ny\nEOF\n'
        f'cat <<E"O"F >/dev/null\nz\nEOF\n{PRINT} {{{{ v }}}} > out'
    ),
    "after_hyphen_delimiter": Context(
        f"cat <<my-doc > /dev/null\nx\nmy-doc\n{PRINT} {{{{ v }}}} > out"
    ),
    "after_quoted_hyphen_delimiter": Context(
        f"cat <<'my-doc' > /dev/null\n'\nmy-doc\n{PRINT} {{{{ v }}}} > out"
    ),
    "after_arithmetic_shift": Context(
        f'n=$(( 1 << 2 ))\n{PRINT} {{{{ v }}}}"$n" > out', lambda v: v + "4"
    ),
    "after_tab_stripped_heredoc": Context(
        f"cat <<-EOF >/dev/null\n\tx\n\tEOF\n{PRINT} {{{{ v }}}} > out"
    ),
    "after_two_heredocs": Context(
        f"cat <<A >/dev/null; cat <<B >/dev/null\na\nA\nb\nB\n{PRINT} {{{{ v }}}} > out"
    ),
    "after_heredoc_in_cmdsub": Context(f"x=$(cat <<EOF\nbody )\nEOF\n)\n{PRINT} {{{{ v }}}} > out"),
    "after_comment": Context(f"# {{{{ v }}}} isn't read\n{PRINT} {{{{ v }}}} > out"),
    # bash only
    "here_string": Context("cat <<< {{ v }} > out", lambda v: v + "\n", bash_only=True),
    "process_substitution": Context(f"cat <({PRINT} {{{{ v }}}}) > out", bash_only=True),
    "after_double_brackets": Context(f"[[ -n x ]] && {PRINT} {{{{ v }}}} > out", bash_only=True),
    "after_array": Context(
        f'a=(1 2); {PRINT} {{{{ v }}}} "${{a[1]}}" > out', lambda v: v + "2", bash_only=True
    ),
}

SHELLS = ["sh", *(["bash"] if shutil.which("bash") else [])]
PATH = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])


def run_script(shell: str, script: str, value: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    rendered = render_script(script, {"v": value})
    # values travel in the environment: the text is the same whatever the value
    assert rendered.text == render_script(script, {"v": "harmless"}).text
    cwd.mkdir()
    env = {**rendered.env, "PATH": PATH, "HOME": str(cwd / "home")}
    return subprocess.run(
        [shell, "-c", rendered.text],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


@pytest.mark.parametrize("payload", list(PAYLOADS))
@pytest.mark.parametrize("context", list(CONTEXTS))
def test_value_arrives_exactly_and_never_runs(context: str, payload: str, tmp_path: Path) -> None:
    ctx, value = CONTEXTS[context], PAYLOADS[payload]
    shells = [s for s in SHELLS if s == "bash" or not ctx.bash_only]
    if not shells:
        pytest.skip("bash is not installed")
    for shell in shells:
        cwd = tmp_path / shell
        result = run_script(shell, ctx.script, value, cwd)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", ""), shell
        assert not list(tmp_path.rglob("PWNED*")), f"{shell}: the value ran as code"
        assert (cwd / "out").read_bytes().decode() == ctx.expect(value), shell


def test_the_table_is_large_enough() -> None:
    assert len(CONTEXTS) >= 30 and len(PAYLOADS) >= 30


def test_every_context_is_allowed_without_warnings() -> None:
    for name, ctx in CONTEXTS.items():
        assert analyse_script(ctx.script, {}).warnings == (), name


# ------------------------------------------------ the four bugs of the old quote tracker


def test_quoted_heredoc_delimiter_with_quotes_inside_is_read_as_the_shell_does(
    tmp_path: Path,
) -> None:
    # `<<'E'OF` ends at the line EOF: the old tracker waited for `E` and put the next
    # value in raw
    script = CONTEXTS["after_quoted_delimiter_E_OF"].script
    assert render_script(script, {"v": "x"}).text.endswith("printf '%s' \"${SWELL_V1}\" > out")
    result = run_script("sh", script, "$(touch PWNED)", tmp_path / "run")
    assert result.returncode == 0 and not (tmp_path / "run" / "PWNED").exists()


def test_arithmetic_shift_is_not_a_heredoc() -> None:
    rendered = render_script("echo $(( 1 << 2 ))\nprintf '%s' {{ v }}", {"v": "*"})
    assert rendered.text.endswith("printf '%s' \"${SWELL_V1}\"")


def test_hyphenated_heredoc_delimiter_is_one_word() -> None:
    rendered = render_script("cat <<my-doc\nx\nmy-doc\nprintf '%s' {{ v }}", {"v": "a b"})
    assert rendered.text.endswith("printf '%s' \"${SWELL_V1}\"")
