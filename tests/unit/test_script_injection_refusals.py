"""Templates are never code: where a value could be read as code (or swell cannot tell),
the script is refused, naming the placeholder and the fix, at `swell validate` time
(file:line:col of the placeholder) and at render time (an ExpressionError)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from manifest_helpers import ProjectDir, make_project

from swell.contracts.base import ContractContext
from swell.contracts.registry import default_contract_types
from swell.contracts.test_suite import TYPE as TEST_SUITE
from swell.manifest.models import Contract, Step
from swell.templates.expressions import ExpressionError
from swell.templates.render import ScriptRefused, analyse_script, render_script

HEREDOC = ("is inside a heredoc body", "NAME={{ v }} python3 - <<'PY'")
ARITH = ("is inside arithmetic", 'expr "$N" + 1')
PARAM = ("is inside ${ … }", "v={{ v }}")
EVAL = ("which runs its arguments as code", "NAME={{ v }}")
NAMES = ("would be a variable name", "NAME={{ v }}")
LOST = ("swell cannot tell how the shell reads this script", "simplify the script")
COMMAND = ("would be the command to run", "printf '%s\\n' {{ v }}")

# name -> (script, words the reason must contain, words the fix must contain)
REFUSED: dict[str, tuple[str, tuple[str, str]]] = {
    # heredocs: a document its command may run
    "python_quoted_heredoc": ("python3 - <<'PY'\nprint(\"{{ v }}\")\nPY\n", HEREDOC),
    "unquoted_heredoc": ("cat <<EOF\n{{ v }}\nEOF\n", HEREDOC),
    "heredoc_quotes_inside_delimiter": ("cat <<'E'OF\nx\n{{ v }}\nEOF\n", HEREDOC),
    "heredoc_hyphen_delimiter": ("cat <<my-doc\n{{ v }}\nmy-doc\n", HEREDOC),
    "heredoc_tabs": ("cat <<-EOF\n\tx {{ v }}\n\tEOF\n", HEREDOC),
    "heredoc_to_sh": ("sh <<EOF\necho {{ v }}\nEOF\n", HEREDOC),
    "heredoc_in_cmdsub": ("x=$(cat <<EOF\n{{ v }}\nEOF\n)\n", HEREDOC),
    "heredoc_delimiter": ("cat <<{{ v }}\nx\n", ("is part of a heredoc delimiter", "fixed")),
    # arithmetic
    "arithmetic": ("echo $(( {{ v }} + 1 ))", ARITH),
    "arithmetic_command": ("(( n = {{ v }} ))", ARITH),
    "arithmetic_for": ("for (( i = {{ v }}; i < 3; i++ )); do :; done", ARITH),
    "let": ("let n={{ v }}", ARITH),
    "cmdsub_in_arithmetic": ("echo $(( $(printf %s {{ v }}) ))", ARITH),
    # ${ ... } operators
    "param_default": ("echo ${x:-{{ v }}}", PARAM),
    "param_pattern": ('echo "${x#{{ v }}}"', PARAM),
    "param_offset": ("echo ${x:{{ v }}}", PARAM),
    # backticks
    "backticks": ("echo `printf %s {{ v }}`", ("is inside backticks", "use $( … )")),
    "backticks_in_quotes": ('echo "`printf %s {{ v }}`"', ("is inside backticks", "$( … )")),
    # commands that run their arguments
    "eval": ("eval {{ v }}", ("`eval`, which runs its arguments", "never run a value as code")),
    "eval_of_cmdsub": ('eval "$(printf %s {{ v }})"', ("`eval`", "never run a value")),
    "trap": ("trap {{ v }} EXIT", ("`trap`", "never run a value")),
    "sh_c": ("sh -c {{ v }}", EVAL),
    "bash_c_quoted": ('bash -c "echo {{ v }}"', EVAL),
    "bash_lc": ("bash -lc 'echo {{ v }}'", EVAL),
    "zsh_c": ("zsh -c {{ v }}", EVAL),
    "dash_c": ("dash -c {{ v }}", EVAL),
    "ksh_c": ("ksh -c {{ v }}", EVAL),
    "sh_c_positional": ("sh -c 'echo \"$1\"' sh {{ v }}", EVAL),
    "python3_c": ("python3 -c \"print('{{ v }}')\"", EVAL),
    "python_c_argument": ("python -c 'import sys' {{ v }}", EVAL),
    "node_e": ("node -e {{ v }}", EVAL),
    "node_print": ("node --print {{ v }}", EVAL),
    "perl_e": ("perl -ne {{ v }}", EVAL),
    "ruby_e": ("ruby -e {{ v }}", EVAL),
    "su_c": ("su nobody -c {{ v }}", EVAL),
    "wrapped_timeout": ("timeout 5 sh -c {{ v }}", EVAL),
    "wrapped_env": ("env A=1 python3 -c {{ v }}", EVAL),
    "wrapped_sudo": ("sudo -u nobody bash -c {{ v }}", EVAL),
    "interpreter_script_position": ("python3 {{ v }}", ("an option or the script", "first")),
    "wrapper_program_position": ("env {{ v }}", ("would name the program", "first")),
    # the command name
    "command_name": ("{{ v }} --version", COMMAND),
    "command_name_in_cmdsub": ("echo $({{ v }})", COMMAND),
    "command_name_after_and": ("true && {{ v }} x", COMMAND),
    "command_name_affixed": ("pre{{ v }} x", COMMAND),
    # variable names (bash evaluates subscripts in names)
    "read_name": ("read {{ v }} < /dev/null", NAMES),
    "printf_v": ("printf -v {{ v }} %s x", ("printf's format", "printf '%s' {{ v }}")),
    "printf_format": ("printf {{ v }}", ("printf's format", "printf '%s' {{ v }}")),
    "declare_integer": ("declare -i n={{ v }}", ("with options", "NAME={{ v }}")),
    "export_name": ("export {{ v }}", NAMES),
    "test_v": ("[ -v {{ v }} ]", NAMES),
    "subscript": ("a[{{ v }}]=1", ("array subscript", "fixed subscript")),
    "array": ("a=({{ v }})", ("array assignment", "NAME={{ v }}")),
    "double_brackets": ("[[ {{ v }} -eq 1 ]]", ("[[ … ]]", "use [ … ] (test)")),
    # variables read as code
    "ps4": ("PS4={{ v }}; set -x; true", ("assigned to PS4", "NAME={{ v }}")),
    "bash_env": ("BASH_ENV={{ v }} bash -c true", ("assigned to BASH_ENV", "your own")),
    "export_path": ("export PATH={{ v }}", ("assigned to PATH", "your own")),
    "env_ld_preload": ("env LD_PRELOAD={{ v }} true", ("assigned to LD_PRELOAD", "your own")),
    # quoting swell does not handle
    "ansi_c_quotes": ("echo $'{{ v }}'", ("$'…'", "plain")),
    "locale_quotes": ('echo $"{{ v }}"', ("$'…'", "plain")),
    "after_backslash": ("echo \\{{ v }}", ("right after a backslash", "remove")),
    "after_dollar": ("echo ${{ v }}", ("right after a backslash or a $", "remove")),
    # what the lexer does not understand
    "unterminated_single": ("echo '{{ v }}", LOST),
    "unterminated_double": ('echo "{{ v }}', LOST),
    "unterminated_cmdsub": ("echo $(printf %s {{ v }}", LOST),
    "unknown_construct_later": ("echo {{ v }}\necho 'oops\n", LOST),
    "heredoc_without_end": ("cat <<EOF\nx\necho {{ v }}\n", HEREDOC),
}


def line_of(script: str, needle: str = "{{ v }}") -> int:
    return script[: script.index(needle)].count("\n") + 1


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_contexts_name_the_placeholder_and_the_fix(name: str) -> None:
    script, (reason, fix) = REFUSED[name]
    with pytest.raises(ScriptRefused) as caught:
        render_script(script, {"v": "harmless"})
    message = str(caught.value)
    assert isinstance(caught.value, ExpressionError)
    assert message.startswith(f"{{{{ v }}}} (line {line_of(script)} of the script) "), message
    why, _, how = message.partition(". Fix: ")
    assert reason in why, message
    assert fix in how, message
    assert caught.value.offset == script.index("{{ v }}")


def test_a_lost_lexer_says_where_it_is_lost() -> None:
    with pytest.raises(ScriptRefused, match=r"\(a ' that is never closed at line 2\)"):
        render_script(REFUSED["unknown_construct_later"][0], {"v": "x"})


def test_a_project_value_is_read_as_the_shell_code_it_is() -> None:
    # {{ project.X }} is inserted as is, so its quotes change how the rest is read
    ns = {"project": {"open": "echo '", "ok": "echo 'a b'"}, "v": "x"}
    with pytest.raises(ScriptRefused, match=r"at line 1 in \{\{ project.open \}\}\)"):
        render_script("{{ project.open }} {{ v }}", ns)
    # lines are counted in the script as written, whatever the project values hold
    ns["project"]["lines"] = "a\nb\nc"
    with pytest.raises(ScriptRefused, match=r"never closed at line 2\)"):
        render_script("{{ project.lines }}\necho {{ v }} 'oops", ns)
    assert render_script("{{ project.ok }} {{ v }}", ns).text == "echo 'a b' \"${SWELL_V2}\""


def test_scripts_without_values_are_not_read() -> None:
    # nothing to place: swell does not judge the script (the shell will)
    assert render_script("echo 'unterminated", {}).text == "echo 'unterminated"
    assert render_script("{{ project.x }} 'oops", {"project": {"x": "a"}}).text == "a 'oops"


def test_a_value_stored_in_a_variable_used_as_a_number_is_a_warning() -> None:
    for script in (
        "n={{ v }}\necho $(( n + 1 ))",
        'n={{ v }}\n[[ "$n" -gt 3 ]]',
        "read -r n <<< {{ v }}\necho ${a[n]}",
        "for n in {{ v }}; do let m=n; done",
        "declare -i n\nn={{ v }}",
        'n={{ v }}\necho "${!n}"',
    ):
        warnings = analyse_script(script, {}).warnings
        assert [w.placeholder for w in warnings] == ["{{ v }}"], script
        assert "is assigned to `n`" in warnings[0].message
    assert analyse_script('n={{ v }}\necho "$n"; [ "$n" -gt 3 ]', {}).warnings == ()


# ------------------------------------------------------------------ swell validate


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ProjectDir:
    return make_project(tmp_path, monkeypatch)


def test_validate_reports_each_refusal_at_its_placeholder(proj: ProjectDir) -> None:
    lines = ["kind: WavePipeline", "steps:"]
    expected: dict[int, tuple[int, int, str]] = {}
    for i, (name, (script, (reason, _))) in enumerate(REFUSED.items()):
        script = script.replace("{{ v }}", "{{ input }}")
        lines += [f"  - id: s{i}", "    script: |"]
        first = len(lines) + 1  # the file line of the script's first line
        lines += [f"      {text}" if text else "" for text in script.rstrip("\n").split("\n")]
        offset = script.index("{{ input }}")
        col = offset - script.rfind("\n", 0, offset) - 1
        expected[first + line_of(script, "{{ input }}") - 1] = (7 + col, name, reason)
    proj.pipeline("\n".join(lines) + "\n")
    errors = [p for p in proj.lint() if p.severity == "error"]
    assert len(errors) == len(REFUSED), "\n".join(map(str, errors))
    for problem in errors:
        col, name, reason = expected[problem.line]
        assert problem.col == col, name
        assert problem.message.startswith("{{ input }} (line "), name
        assert reason in problem.message and "Fix: " in problem.message, name
        assert problem.file.endswith("p.yaml")


def test_validate_finds_placeholders_in_any_yaml_style_and_in_contracts(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: quoted
            script: "echo {{ input }} && eval {{ input }}"
          - id: wave_style
            exec:
              type: command
              source: >-
                echo {{ input }}
                $(( {{ input }} ))
            handover:
              contract:
                type: test_suite
                command: 'printf %s {{ input }}; node -e {{ input }}'
          - id: prompt_text_is_not_a_script
            exec: {type: prompt, source: "eval {{ input }}"}
            persona: dev
          - id: numbers
            script: |
              n={{ input }}
              echo $((n + 1))
        """
    )
    found = [(p.line, p.col, p.severity, p.message[:11]) for p in proj.lint()]
    assert (4, 39, "error", "{{ input }}") in found  # the second placeholder, in quotes
    assert (10, 13, "error", "{{ input }}") in found  # line 2 of a folded scalar
    assert (14, 50, "error", "{{ input }}") in found  # the contract's command
    assert (20, 9, "warning", "{{ input }}") in found
    assert [f for f in found if f[0] == 16] == []  # a prompt is text, not a script
    assert len(found) == 4


def test_swell_validate_and_run_refuse_before_any_run(proj: ProjectDir) -> None:
    proj.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: hello
            script: |
              python3 - <<'PY'
              print("{{ input }}")
              PY
        """
    )
    env = {**os.environ, "NO_COLOR": "1"}
    for args in (["validate"], ["run", "p", "--input", "x"]):
        result = subprocess.run(
            [sys.executable, "-m", "swell", *args],
            cwd=proj.root,
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            check=False,
        )
        output = result.stdout + result.stderr
        assert result.returncode != 0, output
        assert ":6:14: {{ input }} (line 2 of the script) is inside a heredoc body" in output
        assert "Traceback" not in output
    state = Path(os.environ["SWELL_STATE_DIR"])  # tests/conftest.py isolates it
    assert not list(state.glob("runs/*")), "no run was created"
    if (state / "state.db").exists():
        with closing(sqlite3.connect(state / "state.db")) as db:
            assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)


# ------------------------------------------------------------ render time, in a contract


def test_a_refused_test_suite_command_fails_its_contract(tmp_path: Path) -> None:
    contract = Contract.model_validate({"type": "test_suite", "command": "eval {{ input }}"})
    kind = default_contract_types().get(contract.type)
    ctx = ContractContext(
        settings=kind.Settings.model_validate(contract.settings),
        index=0,
        step=Step.model_validate({"id": "work"}),
        workspace=tmp_path,
        project_root=tmp_path,
        run_dir=tmp_path,
        visit=1,
        namespace={"input": "$(touch PWNED)"},
        command_env=dict(os.environ),
        artifacts={},
        stdout=None,
        diff=lambda: "",
        default_timeout=30.0,
    )
    result = asyncio.run(TEST_SUITE.check(ctx))
    assert not result.passed
    assert result.error is not None
    assert "{{ input }} (line 1 of the script) is an argument of `eval`" in result.error
    assert not (tmp_path / "PWNED").exists()
