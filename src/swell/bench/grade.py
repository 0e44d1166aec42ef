"""Grading, independent of the pipeline: only its diff, applied to a clean checkout,
then FAIL_TO_PASS and PASS_TO_PASS run there, each test's result read back.

Resolved means every FAIL_TO_PASS test passes and every PASS_TO_PASS test still
does. Test files the task names are put back as they were at the base commit after
the patch is applied, so a pipeline cannot pass by editing the tests.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
import time
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from swell import sandbox
from swell.bench.checkout import CheckoutError, Tree, apply_patch
from swell.bench.dataset import Task
from swell.process import run_process
from swell.streaming import Stream

if TYPE_CHECKING:
    from swell.bench.confine import Confine

TestResult = Literal["passed", "failed", "error", "skipped", "missing"]
# pytest's `-rA` summary: one line per test, "PASSED id" or "FAILED id - why"
# (an id may hold spaces: a parametrized test's)
_SUMMARY = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$")
_RESULT: dict[str, TestResult] = {
    "PASSED": "passed",
    "XPASS": "passed",
    "FAILED": "failed",
    "XFAIL": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
}
TAIL = 4000  # characters of the test output kept with a grade


class Grade(BaseModel):
    """One graded patch."""

    resolved: bool
    applied: bool
    error: str | None = None  # why it could not be graded (a patch that does not apply, a timeout)
    fail_to_pass: dict[str, TestResult] = {}
    pass_to_pass: dict[str, TestResult] = {}
    test_seconds: float = 0.0  # the test command alone
    grade_seconds: float = 0.0  # checkout, patch, setup and tests
    output: str = ""  # the test output's tail

    @property
    def broken(self) -> list[str]:
        return [t for t, r in self.pass_to_pass.items() if r != "passed"]


def test_argv(task: Task, tests: list[str]) -> list[str]:
    """The test command for `tests`: the task's `test_command` with their ids added
    (`{python}` in it is this Python), or pytest in this Python, every result in its
    summary (`-rA`)."""
    ids = " ".join(shlex.quote(t) for t in tests)
    python = shlex.quote(sys.executable)
    if task.test_command:
        return ["sh", "-c", f"{task.test_command.replace('{python}', python)} {ids}"]
    return ["sh", "-c", f"{python} -m pytest -rA -q -p no:cacheprovider --tb=short {ids}"]


def parse_results(output: str, known: Collection[str] = ()) -> dict[str, TestResult]:
    """Each test's result from pytest's `-rA` summary lines. A line is `STATUS ID` or
    `STATUS ID - WHY`; an id may hold " - " itself, so one of `known` is preferred."""
    found: dict[str, TestResult] = {}
    for line in output.splitlines():
        match = _SUMMARY.match(line.rstrip())
        if match:
            found[_test_id(match.group(2), known)] = _RESULT[match.group(1)]
    return found


def _test_id(rest: str, known: Collection[str]) -> str:
    if rest in known:
        return rest
    cut = rest.find(" - ")
    while cut != -1:
        if rest[:cut] in known:
            return rest[:cut]
        cut = rest.find(" - ", cut + 3)
    return rest.split(" - ", 1)[0]


async def grade(
    task: Task,
    tree: Tree,
    patch: str,
    *,
    timeout: float,
    scratch: Path,
    confine: Confine | None = None,
) -> Grade:
    """Apply `patch` to a clean checkout of `tree` under `scratch` and run the task's
    tests (`confine`: in the sandbox it makes for the checkout)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=scratch, prefix="grade-") as tmp:
        checkout = Path(tmp) / "repo"
        tree.extract(checkout)
        try:
            apply_patch(checkout, patch)
        except CheckoutError as exc:
            return Grade(resolved=False, applied=False, error=f"the patch does not apply: {exc}")
        changed = patched_files(patch)
        touched = _test_files(task) if "*" in changed else _test_files(task) & changed
        if touched:  # the tests as they were: a pipeline cannot pass by editing them
            tree.extract(checkout, only=touched)
        with sandbox.confining(confine(checkout) if confine else None):
            setup_error = await _setup(task, checkout, timeout)
            if setup_error:
                return Grade(resolved=False, applied=True, error=setup_error)
            tests = list(dict.fromkeys([*task.fail_to_pass, *task.pass_to_pass]))
            ran = time.monotonic()
            done = await run_process(
                test_argv(task, tests),
                cwd=checkout,
                env=test_env(),
                timeout=timeout,
                on_output=quiet,
            )
            test_seconds = time.monotonic() - ran
    results = parse_results(done.stdout, set(tests))
    f2p = {t: results.get(t, "missing") for t in task.fail_to_pass}
    p2p = {t: results.get(t, "missing") for t in task.pass_to_pass}
    resolved = not done.timed_out and all(r == "passed" for r in [*f2p.values(), *p2p.values()])
    return Grade(
        resolved=resolved,
        applied=True,
        error=f"the tests took longer than {timeout:g}s" if done.timed_out else None,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        test_seconds=test_seconds,
        grade_seconds=time.monotonic() - started,
        output=(done.stdout + done.stderr)[-TAIL:],
    )


def quiet(stream: Stream, data: bytes | str) -> None:
    pass  # the result has the output; nothing watches it while it runs


def test_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.pop("PYTHONPATH", None)  # the checkout's own code, not swell's path
    return env


def patched_files(patch: str) -> set[str]:
    """The paths a git patch changes (its `diff --git a/X b/Y` lines, both sides)."""
    found = set()
    for line in patch.splitlines():
        if line.startswith('diff --git "'):  # a quoted path: count every test file touched
            return {"*"}
        if line.startswith("diff --git a/") and " b/" in line:
            left, right = line[len("diff --git a/") :].split(" b/", 1)
            found |= {left, right}
    return found


def _test_files(task: Task) -> set[str]:
    return {t.split("::", 1)[0] for t in [*task.fail_to_pass, *task.pass_to_pass]}


async def _setup(task: Task, checkout: Path, timeout: float) -> str | None:
    for command in task.setup:
        done = await run_process(
            ["sh", "-c", command], cwd=checkout, env=test_env(), timeout=timeout, on_output=quiet
        )
        if done.exit_code != 0:
            tail = (done.stdout + done.stderr)[-TAIL:]
            return f"setup `{command}` failed (exit {done.exit_code}): {tail}"
    return None
