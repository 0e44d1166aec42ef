"""The bubblewrap backend on its own: what a process started by `Bubblewrap.wrap` can see,
write and do. Real bwrap: a machine without it fails these tests (install bubblewrap)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from swell.sandbox import Box, confined_env
from swell.sandbox.bubblewrap import Bubblewrap


@pytest.fixture
def bwrap() -> Bubblewrap:
    assert shutil.which("bwrap"), "bwrap is missing: apt-get install bubblewrap"
    backend = Bubblewrap()
    assert backend.problem() is None
    return backend


@pytest.fixture
def box(tmp_path: Path) -> Box:
    """A fake user HOME holding a key, a state directory holding another run's files,
    and this visit's workspace and home inside the state directory."""
    home, state = tmp_path / "userhome", tmp_path / "state"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY\n")
    (state / "workspaces" / "other").mkdir(parents=True)
    (state / "workspaces" / "other" / "secret.txt").write_text("other run\n")
    (state / "state.db").write_text("runs\n")
    ws, run_home = state / "workspaces" / "mine", state / "runs" / "mine" / ".home"
    (ws / "ro").mkdir(parents=True)
    (ws / "ro" / "kept.txt").write_text("kept\n")
    run_home.mkdir(parents=True)
    return Box(writable=(ws,), home=run_home, hidden=(home, state), readonly=(ws / "ro",))


def sh(bwrap: Bubblewrap, box: Box, script: str) -> subprocess.CompletedProcess[str]:
    argv = bwrap.wrap(["sh", "-c", script], box.workspace, box)
    env = confined_env({"PATH": os.environ["PATH"]}, box)
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_only_the_workspace_and_home_are_writable(bwrap: Bubblewrap, box: Box) -> None:
    done = sh(
        bwrap,
        box,
        'echo a > in-ws.txt && echo b > "$HOME/in-home.txt" && echo c > /tmp/t && cat /tmp/t; '
        "for p in /etc/x /usr/x ro/x ../other/x; do "
        '  (echo x > "$p") 2>/dev/null && echo "WROTE $p"; done; true',
    )
    assert done.returncode == 0, done.stderr
    assert "WROTE" not in done.stdout
    assert "c" in done.stdout.split()
    assert (box.workspace / "in-ws.txt").read_text() == "a\n"
    assert (box.home / "in-home.txt").read_text() == "b\n"
    assert not (box.workspace / "ro" / "x").exists()
    assert not Path("/tmp/t").exists() or Path("/tmp/t").read_text() != "c\n"


def test_the_users_home_other_workspaces_and_the_store_are_hidden(
    bwrap: Bubblewrap, box: Box
) -> None:
    home, state = box.hidden
    done = sh(
        bwrap,
        box,
        f"cat {home}/.ssh/id_rsa; cat {state}/workspaces/other/secret.txt; "
        f"cat {state}/state.db; ls -A {home} {state}/workspaces; cat ro/kept.txt",
    )
    assert "PRIVATE KEY" not in done.stdout
    assert "other run" not in done.stdout
    assert "runs" not in done.stdout.split()
    assert "kept" in done.stdout
    assert "other" not in done.stdout.split()  # only this visit's workspace is there


def test_a_visible_path_under_a_hidden_one_is_read_only(bwrap: Bubblewrap, box: Box) -> None:
    home = box.hidden[0]
    (home / "bin").mkdir()
    (home / "bin" / "tool").write_text("#!/bin/sh\necho tool ran\n")
    (home / "bin" / "tool").chmod(0o755)
    shown = Box(box.writable, box.home, box.hidden, visible=(home / "bin",))
    done = sh(bwrap, shown, f"{home}/bin/tool; echo x > {home}/bin/tool || echo refused")
    assert "tool ran" in done.stdout and "refused" in done.stdout
    assert "PRIVATE" not in sh(bwrap, shown, f"cat {home}/.ssh/id_rsa").stdout


def test_no_privileges_no_namespaces_no_view_of_other_processes(
    bwrap: Bubblewrap, box: Box
) -> None:
    done = sh(
        bwrap,
        box,
        "grep CapEff /proc/self/status; unshare -U true 2>/dev/null && echo UNSHARED; "
        "ls /proc | grep -c '^[0-9]'; mount -t tmpfs none ro 2>/dev/null && echo MOUNTED; true",
    )
    assert "CapEff:\t0000000000000000" in done.stdout
    assert "UNSHARED" not in done.stdout and "MOUNTED" not in done.stdout
    visible_pids = int(done.stdout.split()[-1])
    assert visible_pids < 10  # its own few, not the host's


def test_a_box_without_network_has_no_route_out(bwrap: Bubblewrap, box: Box) -> None:
    offline = Box(box.writable, box.home, box.hidden, network=False)
    done = sh(bwrap, offline, "cat /proc/net/route | wc -l; tail -n +3 /proc/net/dev | cut -d: -f1")
    assert done.stdout.split()[0] == "1"  # the header only: no route
    assert done.stdout.split()[1:] == ["lo"]  # no interface but loopback


def test_the_environment_is_the_curated_set(box: Box) -> None:
    environ = {"PATH": "/bin", "SECRET_TOKEN": "s", "PASSED": "p", "USER": "me", "LANG": "C"}
    box2 = Box(box.writable, box.home, box.hidden, env_passthrough=("PASSED",))
    env = {**environ, "SWELL_RUN_ID": "r1", "ANTHROPIC_API_KEY": "k"}
    inside = confined_env(
        env, box2, inherit=("ANTHROPIC_*",), environ={**environ, "ANTHROPIC_API_KEY": "k"}
    )
    assert inside == {
        "PATH": "/bin",
        "PASSED": "p",
        "USER": "me",
        "SWELL_RUN_ID": "r1",
        "ANTHROPIC_API_KEY": "k",
        "HOME": str(box.home),
        "TMPDIR": "/tmp",
    }


def test_a_missing_bwrap_says_how_to_install_it(tmp_path: Path) -> None:
    problem = Bubblewrap(path=str(tmp_path)).problem()
    assert problem is not None and "apt-get install bubblewrap" in problem
