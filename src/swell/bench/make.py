"""`swell bench make`: a dataset from mutants of a project whose tests pass.

Each mutant (mutate.py) some test catches becomes a task: its base commit is the
project's HEAD with the mutant (a commit kept under `refs/swell-bench/`), the tests it
breaks are FAIL_TO_PASS, the other passing tests PASS_TO_PASS, the patch back to HEAD
is the gold patch, and the problem statement is the failing tests' own report.
`rebuild` makes the same commits again from the dataset alone (docs/bench.md).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from swell.bench.checkout import CheckoutError, Tree, git
from swell.bench.dataset import Task, load_dataset
from swell.bench.grade import TAIL, parse_results, quiet, test_argv, test_env
from swell.bench.mutate import OPERATORS, Mutant, mutants
from swell.errors import SwellError
from swell.process import run_process

REF_PREFIX = "refs/swell-bench/"
DEFAULT_TESTS = "{python} -m pytest -rA -q -p no:cacheprovider --tb=short"
_TEST_FILE = re.compile(r"(^|/)(test_[^/]*|[^/]*_test|conftest|setup)\.py$|(^|/)(tests?|docs)/")


@dataclass
class MakeOptions:
    max_tasks: int = 40
    sources: list[str] = field(default_factory=list)
    repo_field: str | None = None
    test_timeout: float = 300.0
    test_command: str = DEFAULT_TESTS


class MakeError(SwellError):
    """A project `bench make` cannot build a dataset from."""


async def _collect(checkout: Path, command: str, timeout: float) -> list[str]:
    """The suite's test ids, as pytest collects them (`--collect-only -q`)."""
    done = await run_process(
        _argv(command, "--collect-only -q"),
        cwd=checkout,
        env=test_env(),
        timeout=timeout,
        on_output=quiet,
    )
    return [line for line in done.stdout.splitlines() if "::" in line and line[:1] != " "]


def _argv(command: str, extra: str) -> list[str]:
    probe = Task(
        instance_id="probe",
        repo=".",
        base_commit="HEAD",
        problem_statement="",
        fail_to_pass=["-"],
        test_command=f"{command} {extra}".strip(),
    )
    return test_argv(probe, [])


async def _run_tests(
    checkout: Path, command: str, timeout: float, known: list[str]
) -> tuple[dict[str, str], str]:
    done = await run_process(
        _argv(command, ""), cwd=checkout, env=test_env(), timeout=timeout, on_output=quiet
    )
    if done.timed_out:
        return {}, "timed out"
    return dict(parse_results(done.stdout, set(known))), done.stdout


def _sources(tree_dir: Path, wanted: list[str]) -> list[str]:
    if wanted:
        return wanted
    found = sorted(str(p.relative_to(tree_dir)) for p in tree_dir.rglob("*.py"))
    return [p for p in found if not _TEST_FILE.search(p)]


def _spread(mutant: Mutant, nth: int) -> str:
    """A fixed pseudo-random order: mutants from all over the source, not its top."""
    return hashlib.sha256(
        f"{mutant.path}:{mutant.line}:{nth}:{mutant.mutated}".encode()
    ).hexdigest()


def _interleaved(candidates: list[Mutant]) -> Iterator[Mutant]:
    """Operators in turn, each in a fixed spread order: a varied dataset however few
    are kept."""
    queues = {
        op: [
            m
            for _, m in sorted(
                (_spread(m, i), m) for i, m in enumerate(candidates) if m.operator == op
            )
        ]
        for op in OPERATORS
    }
    while any(queues.values()):
        for op in OPERATORS:
            if queues[op]:
                yield queues[op].pop(0)


def commit_mutant(repo: Path, base: str, path: str, text: str, instance_id: str) -> str:
    """The commit of `base` with `path` holding `text`, kept as a ref; the same inputs
    make the same commit (fixed identity and dates, checkout.GIT_IDENTITY)."""
    blob = git(repo, "hash-object", "-w", "--stdin", data=text.encode("utf-8")).decode().strip()
    mode = git(repo, "ls-tree", base, "--", path).decode().split(" ", 1)[0] or "100644"

    def change(env: dict[str, str]) -> None:
        git(repo, "update-index", "--cacheinfo", f"{mode},{blob},{path}", env=env)

    return _commit(repo, base, instance_id, change)


def _commit(
    repo: Path, base: str, instance_id: str, change: Callable[[dict[str, str]], object]
) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(repo, "read-tree", base, env=env)
        change(env)
        tree = git(repo, "write-tree", env=env).decode().strip()
    message = f"swell bench: {instance_id}".encode()
    commit = git(repo, "commit-tree", tree, "-p", base, data=message).decode().strip()
    git(repo, "update-ref", f"{REF_PREFIX}{instance_id}", commit)
    return commit


def _statement(failing: list[str], output: str) -> str:
    """The failing tests and what pytest said about them (its timing line left out)."""
    lines = [line for line in output.splitlines() if not re.match(r"^=+ .* in [\d.]+s", line)]
    start = next((i for i, line in enumerate(lines) if "FAILURES" in line), 0)
    end = next((i for i, line in enumerate(lines) if "short test summary" in line), len(lines))
    report = "\n".join(lines[start:end]).strip()
    if len(report) > TAIL:  # the first failures, whole lines
        report = report[:TAIL].rsplit("\n", 1)[0] + "\n..."
    shown = "\n".join(f"- {t}" for t in failing[:20])
    more = f"\n- ... and {len(failing) - 20} more" if len(failing) > 20 else ""
    return (
        f"These tests fail and should pass:\n{shown}{more}\n\n"
        f"pytest reports:\n\n{report}\n\nFix the code (not the tests)."
    )


async def make_dataset(
    repo: Path, out: Path, options: MakeOptions, say: Callable[[str], None]
) -> list[Task]:
    try:
        if not (repo / ".git").exists():  # not a directory inside another repository
            raise CheckoutError("no .git")
        base = git(repo, "rev-parse", "HEAD").decode().strip()
    except CheckoutError:
        raise MakeError(f"{repo} is not a git repository with a commit") from None
    tree = Tree.of(repo, base)
    with tempfile.TemporaryDirectory(prefix="swell-bench-make-") as tmp:
        original = Path(tmp) / "original"
        tree.extract(original)
        known = await _collect(original, options.test_command, options.test_timeout)
        results, output = await _run_tests(
            original, options.test_command, options.test_timeout, known
        )
        passing = sorted(t for t, r in results.items() if r == "passed")
        if not passing:
            raise MakeError(f"no test passes in {repo} at {base[:12]}: {output[-2000:]}")
        say(f"{len(passing)} tests pass at {base[:12]}")
        candidates = [
            m
            for path in _sources(original, options.sources)
            for m in mutants(path, (original / path).read_text(encoding="utf-8"))
        ]
        say(f"{len(candidates)} mutants; testing until {options.max_tasks} are caught")
        tasks: list[Task] = []
        name = repo.name.removesuffix(".git")
        for tried, mutant in enumerate(_interleaved(candidates), 1):
            if len(tasks) >= options.max_tasks:
                break
            work = Path(tmp) / "mutant"
            shutil.rmtree(work, ignore_errors=True)
            tree.extract(work)
            (work / mutant.path).write_text(mutant.mutated, encoding="utf-8")
            now, out_text = await _run_tests(
                work, options.test_command, options.test_timeout, known
            )
            failing = [t for t in passing if now.get(t) != "passed"]
            if not now or not failing or len(failing) == len(passing):
                continue  # uncaught, or broken before any test could run (an import)
            instance_id = f"{name}-{len(tasks) + 1:03d}"
            commit = commit_mutant(repo, base, mutant.path, mutant.mutated, instance_id)
            gold = git(repo, "diff", "--binary", commit, base).decode("utf-8")
            tasks.append(
                Task(
                    instance_id=instance_id,
                    repo=options.repo_field or str(repo),
                    base_commit=commit,
                    problem_statement=_statement(failing, out_text),
                    fail_to_pass=failing,
                    pass_to_pass=[t for t in passing if t not in failing],
                    test_command=options.test_command,
                    patch=gold,
                )
            )
            say(
                f"{instance_id}: {mutant.path}:{mutant.line} {mutant.operator} "
                f"({mutant.description}) breaks {len(failing)} tests  [{tried} tried]"
            )
    out.write_text("".join(t.line() + "\n" for t in tasks), encoding="utf-8")
    return tasks


def snapshot(source: Path, dest: Path) -> str:
    """`dest`: a new git repository of `source`'s files in one commit, the same commit
    for the same files wherever it is made."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".git"))
    git(dest, "init", "--quiet", "--template=")
    git(dest, "add", "-A")
    git(dest, "commit", "--quiet", "--no-verify", "-m", "swell bench: snapshot")
    return git(dest, "rev-parse", "HEAD").decode().strip()


def rebuild(source: Path, dataset: Path, dest: Path) -> str:
    """The repository a dataset `bench make` wrote on a snapshot of `source` needs: the
    snapshot, then each task's base commit again (its gold patch reversed). Raises
    MakeError when a commit comes out different (the source is not what was mutated)."""
    base = snapshot(source, dest)
    for task in load_dataset(dataset).tasks:
        patch = (task.patch or "").encode("utf-8")

        def reverse(env: dict[str, str], patch: bytes = patch) -> None:
            git(dest, "apply", "--cached", "-R", "-", data=patch, env=env)

        commit = _commit(dest, base, task.instance_id, reverse)
        if commit != task.base_commit:
            raise MakeError(
                f"{task.instance_id}: rebuilt commit {commit[:12]} is not the dataset's "
                f"{task.base_commit[:12]} (is {source} the source it was made from?)"
            )
    return base
