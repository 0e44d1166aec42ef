"""Which shell runs a command step's script: `sh` unless it uses a bash feature."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from swell.workspace.shell import shell_for

PATH = os.environ["PATH"]

POSIX = [
    "echo change >> work.txt",
    "test $(grep -c . work.txt) -ge 1000",
    'x=$((1 + 2)); [ "$x" = 3 ] && echo ok',
    'for f in *.py; do echo "$f"; done',
    "cat <<EOF\nhello\nEOF",
    'echo "${HOME:-/}" "${name%.txt}"',
]
BASH = [
    "#!/bin/bash\necho hi",
    "set -o pipefail\nfalse | cat",
    "diff <(sort a) <(sort b)",
    'if [[ -n "$x" ]]; then echo y; fi',
    '[ "$a" == "b" ] && echo same',
    "echo $'tab\\there'",
    "arr=(a b c); echo ${arr[1]}",
    "function f { echo x; }; f",
    "source ./env.sh",
    "echo {1..3}",
    'grep x <<< "$text"',
    "make &> build.log",
    "(( n += 1 ))",
    'echo "${name//a/b}" "${name:0:3}"',
    "echo $RANDOM",
]


@pytest.mark.parametrize("script", POSIX)
def test_posix_scripts_run_under_sh(script: str) -> None:
    argv, refusal = shell_for(script, PATH)
    assert refusal is None and argv is not None
    assert Path(argv[0]).name == "sh" and argv[1:] == ["-c", script]


@pytest.mark.parametrize("script", BASH)
def test_bash_scripts_run_under_bash(script: str) -> None:
    argv, _ = shell_for(script, PATH)
    assert argv is not None and Path(argv[0]).name == "bash"


def test_without_sh_bash_runs_everything(tmp_path: Path) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    (tmp_path / "bash").symlink_to(bash)
    argv, _ = shell_for("echo plain", str(tmp_path))
    assert argv == [str(tmp_path / "bash"), "-c", "echo plain"]


def test_without_bash_a_bash_script_is_refused_by_name(tmp_path: Path) -> None:
    sh = shutil.which("sh")
    assert sh is not None
    (tmp_path / "sh").symlink_to(sh)
    argv, refusal = shell_for("set -o pipefail; false | cat", str(tmp_path))
    assert argv is None and refusal is not None and "`set -o pipefail`" in refusal
