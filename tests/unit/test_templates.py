"""`{{ ... }}` in prompts (text) and scripts (never shell code, except project vars)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from swell.templates.expressions import ExpressionError
from swell.templates.render import Rendered, parse_template, render_script, render_text

EVIL = (
    'it\'s a "test" $(touch PWNED) `touch PWNED` ; touch PWNED && echo $HOME ${HOME}'
    " \\ \\n *  ?\n'; touch PWNED; echo '\n\"; touch PWNED; echo \"\nEOF\nEND\n"
    "  trailing spaces and a tab\t"
)


def run_sh(rendered: Rendered, cwd: Path) -> subprocess.CompletedProcess[str]:
    # only the rendered env (plus PATH, so `cat` is found): no inherited variables
    env = {**rendered.env, "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    return subprocess.run(
        ["sh", "-c", rendered.text],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )


# ------------------------------------------------------------------------------- text


def test_render_text_inserts_values_as_text() -> None:
    ns = {
        "input": "add a $(greeting)",
        "context": {"tests_pass": True, "n": 3.0},
        "steps": {"build": {"outcome": "success", "artifacts": {"plan": "PLAN"}}},
        "json": {"items": [1, 2]},
    }
    out = render_text(
        "Task: {{ input }} | {{context.tests_pass}} | {{ context.n }} | "
        "{{ steps.build.artifacts.plan }} | {{ steps.build.outcome == 'success' }} | {{ json }}",
        ns,
    )
    assert out.text == ('Task: add a $(greeting) | true | 3 | PLAN | true | {"items": [1, 2]}')
    assert out.missing == []
    assert out.env == {}


def test_missing_variables_render_empty_and_are_reported() -> None:
    out = render_text("a={{ nope }} b={{ steps.x.outcome }} c={{ input }}", {"input": "in"})
    assert out.text == "a= b= c=in"
    assert out.missing == ["nope", "steps.x.outcome"]


def test_text_without_placeholders_is_unchanged() -> None:
    text = "no templates here: { not } {{ not closed"
    assert render_text(text, {}).text == text


def test_trim_markers_are_accepted() -> None:
    assert render_text("[{{- input -}}]", {"input": "x"}).text == "[x]"


def test_bad_placeholder_names_itself() -> None:
    with pytest.raises(ExpressionError, match=r"^in \{\{ input ; rm \}\}: "):
        parse_template("ok {{ input }} then {{ input ; rm }}")


def test_go_style_input_alias() -> None:
    assert render_text("{{ .Input }}", {"input": "hello"}).text == "hello"


# ----------------------------------------------------------------------------- scripts

# heredocs carry no values (a heredoc is a document its command may run): they are
# refused (tests/unit/test_script_injection.py); values after them keep their quoting
SCRIPT = """\
printf '%s' {{ v }} > unquoted.txt
printf '%s' "pre {{ v }} post" > double.txt
printf '%s' 'pre {{ v }} post' > single.txt
cat > heredoc.txt <<EOF
pre $HOME post
EOF
cat > heredoc_quoted.txt <<'END_OF_TEXT'
pre $HOME post
END_OF_TEXT
printf '%s' {{ v }}{{ v }} > adjacent.txt
"""


@pytest.mark.parametrize(
    "value",
    [
        EVIL,
        "plain",
        "",
        "$(touch PWNED)",
        "`touch PWNED`",
        "'",
        '"',
        "\\",
        "\n\n",
        "-n",
        "${IFS}*",
    ],
)
def test_script_values_never_execute_and_arrive_byte_for_byte(value: str, tmp_path: Path) -> None:
    rendered = render_script(SCRIPT, {"v": value})
    result = run_sh(rendered, tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "PWNED").exists()

    def read(name: str) -> str:
        return (tmp_path / name).read_bytes().decode()

    assert read("unquoted.txt") == value
    assert read("double.txt") == f"pre {value} post"
    assert read("single.txt") == f"pre {value} post"
    assert read("heredoc.txt") == "pre  post\n"  # run_sh passes no HOME
    assert read("heredoc_quoted.txt") == "pre $HOME post\n"
    assert read("adjacent.txt") == value + value


def test_script_values_travel_in_the_environment_not_the_text() -> None:
    rendered = render_script("echo {{ input }} && echo '{{ input }}'", {"input": "$(id)"})
    assert "$(id)" not in rendered.text
    assert rendered.env == {"SWELL_V1": "$(id)", "SWELL_V2": "$(id)"}
    # the preview shows people what will run
    assert rendered.preview == "echo $(id) && echo '$(id)'"


def test_values_inside_command_substitution_keep_their_bytes(tmp_path: Path) -> None:
    value = "a  b * $(touch PWNED) 'q'"
    script = (
        "printf '%s' \"$(printf '%s' {{ v }})\" > sub_unquoted.txt\n"
        "printf '%s' \"$(printf '%s' '{{ v }}')\" > sub_single.txt\n"
        "printf '%s' \"x$(printf '%s' \"{{ v }}\")y\" > sub_double.txt\n"
        "printf '%s' \"after $(echo) {{ v }}\" > after_sub.txt\n"
    )
    rendered = render_script(script, {"v": value})
    result = run_sh(rendered, tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "PWNED").exists()
    assert (tmp_path / "sub_unquoted.txt").read_text() == value
    assert (tmp_path / "sub_single.txt").read_text() == value
    assert (tmp_path / "sub_double.txt").read_text() == f"x{value}y"
    assert (tmp_path / "after_sub.txt").read_text() == f"after  {value}"


def test_hash_right_after_a_value_is_not_a_comment(tmp_path: Path) -> None:
    rendered = render_script(
        "printf '%s' {{ a }}#'{{ b }}' > out.txt\n# it's a comment\nprintf '%s' '{{ a }}' >> out.txt",
        {"a": "A", "b": "b c $(touch PWNED)"},
    )
    result = run_sh(rendered, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text() == "A#b c $(touch PWNED)A"
    assert not (tmp_path / "PWNED").exists()


def test_comments_do_not_change_the_quoting_of_later_lines(tmp_path: Path) -> None:
    rendered = render_script(
        "# check that {{ a }} isn't empty\nprintf '%s' {{ b }} > out.txt\n"
        "cat > h.txt <<EOF # a comment after the heredoc word\nno value\nEOF\n"
        "printf '%s' {{ b }} >> out.txt\n",
        {"a": "A", "b": "b  c $(touch PWNED)"},
    )
    result = run_sh(rendered, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text() == "b  c $(touch PWNED)" * 2
    assert (tmp_path / "h.txt").read_text() == "no value\n"
    assert not (tmp_path / "PWNED").exists()
    # a comment is never read: its placeholder is a bare reference with no value behind it
    assert rendered.text.startswith('# check that "${SWELL_V1}" isn\'t empty\n')
    assert "SWELL_V1" not in rendered.env


def test_dash_heredoc_strips_tabs_and_later_values_keep_their_quoting(tmp_path: Path) -> None:
    rendered = render_script(
        "cat > out.txt <<-EOF\n\t[x]\n\tEOF\ncat > q.txt <<-'EOF'\n\t[y]\n\tEOF\n"
        "printf '%s' {{ v }} > v.txt\n",
        {"v": "$(touch PWNED) x"},
    )
    result = run_sh(rendered, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.txt").read_text() == "[x]\n"
    assert (tmp_path / "q.txt").read_text() == "[y]\n"
    assert (tmp_path / "v.txt").read_text() == "$(touch PWNED) x"
    assert not (tmp_path / "PWNED").exists()


def test_values_in_heredocs_are_refused_whatever_the_value() -> None:
    # before: a quoted heredoc got the value inserted as is; now no heredoc gets one
    for script in ("cat <<'EOF'\n{{ v }}\nEOF\n", "cat <<-EOF\n\t[{{ v }}]\n\tEOF\n"):
        for value in ("harmless\nEOF\ntouch PWNED", "not EOF here"):
            with pytest.raises(
                ExpressionError,
                match=r"^\{\{ v \}\} \(line 2 of the script\) is inside a heredoc body",
            ):
                render_script(script, {"v": value})


def test_project_variables_are_inserted_as_shell_code(tmp_path: Path) -> None:
    ns = {"project": {"test_command": "echo $((2 + 3)) > sum.txt"}, "input": "$((6 * 7))"}
    rendered = render_script("{{ project.test_command }}\nprintf '%s' {{ input }} > in.txt", ns)
    assert rendered.text.startswith("echo $((2 + 3)) > sum.txt\n")
    assert list(rendered.env.values()) == ["$((6 * 7))"]
    result = run_sh(rendered, tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "sum.txt").read_text() == "5\n"
    assert (tmp_path / "in.txt").read_text() == "$((6 * 7))"


def test_missing_variables_in_scripts_render_empty(tmp_path: Path) -> None:
    rendered = render_script("printf '[%s]' {{ nope }} {{ context.x }} > out.txt", {"context": {}})
    assert rendered.missing == ["nope", "context.x"]
    result = run_sh(rendered, tmp_path)
    assert result.returncode == 0, result.stderr
    # an empty value is still one (empty) argument
    assert (tmp_path / "out.txt").read_text() == "[][]"


def test_script_env_prefix_names_the_variables() -> None:
    rendered = render_script("echo {{ a }}", {"a": "1"}, env_prefix="X_")
    assert rendered.text == 'echo "${X_1}"'
    assert rendered.env == {"X_1": "1"}
