"""Every `swell` command shown in docs/*.md and README.md still runs and prints what the
docs show.

A fenced block with `$ swell …` lines is a console session: each command runs against
a fixture project (a copy of examples/ at PROJECT, plus the few pipelines the docs'
stories need) and its printed output (stdout and stderr as a terminal shows them) must
match the lines under it. What changes from one run to the next is matched by shape:
run ids (the same doc id is the same run everywhere), times, durations, sizes, hashes,
versions, process ids, the project's path. A line `…` stands for any lines, a `…` in a
line for any text. The sessions run in SESSIONS' order, on one project, since the docs
tell one story (a run, then its status, its gate decided, its logs).

A block of bare `swell …` lines is a synopsis: each command's options must be in its
`--help`. A block that cannot run here is in NOT_RUN with the reason; a block in
neither fails the test, so a new example in the docs is run or explained.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES, REPO, swell_cmd, wait_for

DOCS = [*sorted((REPO / "docs").glob("*.md")), REPO / "README.md"]
PROJECT = "/tmp/project"  # where the docs' sessions ran
HANG = 300.0  # seconds a command may take: only catches a hang

# Pipelines the docs' stories use besides the examples' own
EXTRA = {
    "broken": "kind: WavePipeline\nsteps:\n  - id: broken\n    script: exit 3\n",
    "slow": "kind: WavePipeline\nsteps:\n  - id: wait\n    script: sleep 600\n",
    "slow-build": (
        "kind: WavePipeline\nsteps:\n  - id: build\n    script: for i in 1 2 3 4 5; do "
        'echo "compiling module $i"; sleep 1; done; echo "build ok"\n'
    ),
    # its executing process is frozen (SIGSTOP) by the test: a process that does not stop
    "stubborn": "kind: WavePipeline\nsteps:\n  - id: hold\n    script: sleep 600\n",
    "triage": (
        "kind: WavePipeline\ninput: {type: issue_ref, example: 're-cinq/wave 42'}\nsteps:\n"
        "  - id: read\n    script: echo {{ input }}\n"
    ),
}

# Blocks that do not run here, each with why. Keyed as SESSIONS is: "file: first command".
NOT_RUN = {
    'README.md: swell run hello --input "add a greeting" --adapter claude --model '
    "claude-sonnet-4-5": "a real model: Claude Code logged in, and an OpenAI-compatible "
    "server on localhost:11434 (the adapters' own tests run these CLIs against twins)",
    "scale-out.md: swell worker --slots 4": "a Temporal server and Postgres at the "
    "deployment's addresses (tests/temporal runs the same commands on a dev server)",
}


@dataclass
class Block:
    """One fenced block: its file, line, and commands with the output shown under each."""

    doc: str
    line: int
    commands: list[tuple[str, list[str]]] = field(default_factory=list)
    synopsis: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        first = self.commands[0][0] if self.commands else self.synopsis[0]
        return f"{self.doc}: {first.split('#')[0].strip()}"


def blocks() -> Iterator[Block]:
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(r"^```[^\n]*\n(.*?)^```", text, re.S | re.M):
            block = Block(path.name, text[: m.start()].count("\n") + 1)
            for raw in m.group(1).splitlines():
                if raw.startswith("$ "):
                    block.commands.append((raw[2:].strip(), []))
                elif block.commands:
                    block.commands[-1][1].append(raw.rstrip())
                elif re.match(r"([A-Z_]+=\S+ )*swell ", raw):
                    block.synopsis.append(raw.strip())
            if any(c.startswith("swell ") for c, _ in block.commands) or block.synopsis:
                yield block


# ------------------------------------------------------------------ matching

RUN_ID = r"[a-z][a-z0-9-]*?-\d{8}-\d{6}-[0-9a-f]{8}"
# what varies between runs, as (pattern in the docs, what it matches in real output)
VARYING = [
    (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"),
    (r"\b\d+\.\d+\.\d+\b", r"\d+(?:\.\d+)+"),  # versions
    (r"\b\d\d:\d\d:\d\d\b", r"\d\d:\d\d:\d\d"),
    (r"\b\d+(?:\.\d+)? (?:B|KB|MB)\b", r"\d+(?:\.\d+)? (?:B|KB|MB)"),
    (r"\b\d+(?:\.\d+)?(?:ms|s)\b", r"\d+(?:\.\d+)?(?:ms|s)"),
    (r"\b[0-9a-f]{12,64}\b", r"[0-9a-f]{12,64}"),
    (r"(?<=pid )\d+|(?<=process )\d+", r"\d+"),
    (r"(?<=_ms: )\d+|(?<=_ms\": )\d+|(?<=_ms': )\d+|(?<=_ms=)\d+", r"\d+"),
    (r"(?<= on )vm\b", r"\S+"),
    (r" {2,}", r" +"),  # columns: their widths follow what is in them
    (r"…", r".*?"),
]
TOKEN = re.compile(
    "|".join(f"(?P<v{i}>{p})" for i, (p, _) in enumerate(VARYING))
    + f"|(?P<run>{RUN_ID})|(?P<path>{re.escape(PROJECT)}|/tmp/ex2)"
)


@dataclass
class Session:
    """The story so far: which real run each run id in the docs is, and where."""

    root: Path
    env: dict[str, str]
    runs: dict[str, str] = field(default_factory=dict)
    background: list[subprocess.Popen[str]] = field(default_factory=list)
    last_rc: int = 0
    cwd: Path | None = None

    def pattern(self, expected: list[str]) -> tuple[str, dict[str, str]]:
        """A regex for the output `expected` shows, and its groups' doc run ids."""
        groups: dict[str, str] = {}
        out: list[str] = []
        for line in expected:
            if line.strip() in ("…", "..."):
                out.append(r"(?:[^\n]*\n)*?")
                continue
            part, at = [], 0
            for m in TOKEN.finditer(line):
                part.append(re.escape(line[at : m.start()]))
                at = m.end()
                if m.lastgroup == "run":
                    part.append(self._run(m.group(), groups))
                elif m.lastgroup == "path":
                    part.append(re.escape(str(self.root / Path(m.group()).name)))
                else:
                    part.append(VARYING[int(str(m.lastgroup)[1:])][1])
            part.append(re.escape(line[at:]))
            out.append("".join(part) + r"[ ]*\n")
        return "".join(out), groups

    def _run(self, doc_id: str, groups: dict[str, str]) -> str:
        if doc_id in self.runs:
            return re.escape(self.runs[doc_id])
        for name, seen in groups.items():
            if seen == doc_id:
                return f"(?P={name})"
        name = f"r{len(groups)}"
        groups[name] = doc_id
        pipeline = doc_id[: -len("-20261124-023208-30daceee")]
        return f"(?P<{name}>{re.escape(pipeline)}-\\d{{8}}-\\d{{6}}-[0-9a-f]{{8}})"

    def command(self, text: str) -> list[str]:
        unknown = [r for r in re.findall(RUN_ID, text) if r not in self.runs]
        assert not unknown, f"`{text}` names run {unknown[0]} before the docs show it"
        for doc_id, real in self.runs.items():
            text = text.replace(doc_id, real)
        args = [a for a in shlex.split(text, comments=True) if a != "</dev/null"]
        return [a for a in args if not a.startswith("<")]

    def run(self, text: str, expected: list[str]) -> str | None:
        """Run one command of a session; what does not match, or None."""
        if text == "echo $?":
            shown = "\n".join(expected).strip()
            return None if shown == str(self.last_rc) else f"exit code {self.last_rc}, not {shown}"
        if text.startswith("cd "):
            self.cwd = (self.cwd or self.root) / text[3:].strip()
            return None
        args = self.command(text)
        assert args[0] == "swell", text
        proc = subprocess.run(
            swell_cmd(*args[1:]),
            cwd=self.cwd or self.root / "project",
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=HANG,
        )
        self.last_rc = proc.returncode
        return self.check(expected, proc.stdout)

    def check(self, expected: list[str], printed: str) -> str | None:
        while expected and not expected[-1].strip():
            expected = expected[:-1]
        lines = [line.rstrip() for line in printed.splitlines()]
        while lines and not lines[-1]:
            lines.pop()
        regex, groups = self.pattern(expected)
        found = re.fullmatch(regex, "".join(f"{line}\n" for line in lines))
        if found is None:
            if self._same_but_order(expected, lines):
                return None
            return "printed:\n" + "\n".join(f"    {line}" for line in lines)
        for name, doc_id in groups.items():
            self.runs[doc_id] = found.group(name)
        return None

    def _same_but_order(self, expected: list[str], lines: list[str]) -> bool:
        """The same lines in another order. A list sorted by run id (`swell clean`) puts
        two runs started in the same second in the order of their random hex digits:
        each line is matched alone, lines naming only known runs first (a run first
        seen in such a list is not bound)."""
        if len(expected) != len(lines):
            return False
        patterns = sorted((self.pattern([line])[0] for line in expected), key=lambda r: "(?P<" in r)
        left = [f"{line}\n" for line in lines]
        for regex in patterns:
            hit = next((line for line in left if re.fullmatch(regex, line)), None)
            if hit is None:
                return False
            left.remove(hit)
        return True


# ------------------------------------------------------------------ the stories


def _background(session: Session, *args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        swell_cmd(*args),
        cwd=session.root / "project",
        env=session.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    session.background.append(proc)
    return proc


def _json(session: Session, *args: str) -> Any:
    shown = subprocess.run(
        swell_cmd(*args, "-o", "json"),
        cwd=session.root / "project",
        env=session.env,
        capture_output=True,
        text=True,
        timeout=HANG,
    )
    return json.loads(shown.stdout)


def _newest(session: Session, pipeline: str, status: str) -> str:
    """The id of the newest run of `pipeline`, once it has `status`."""

    def found() -> str | None:
        runs = _json(session, "list")
        runs = runs["runs"] if isinstance(runs, dict) else runs
        newest = next((r for r in runs if r["pipeline"] == pipeline), None)
        return str(newest["id"]) if newest and newest["status"] == status else None

    return str(wait_for(found, timeout=HANG))


def _started(session: Session, pipeline: str) -> None:
    """Start a run of `pipeline` in the background; return once its step runs."""
    _background(session, "run", pipeline)
    run_id = _newest(session, pipeline, "running")

    def running() -> bool:
        steps = _json(session, "status", run_id)["steps"]
        return bool(steps) and steps[0]["status"] == "running"

    wait_for(running, timeout=HANG)


def _slow_build(session: Session) -> None:
    _started(session, "slow-build")


def _ended(session: Session) -> None:
    _newest(session, "loop", "succeeded")


def _slow_build_killed(session: Session) -> None:
    """A run of slow-build whose `swell run` is killed (-9) after two modules."""
    proc = _background(session, "run", "slow-build")
    run_id = _newest(session, "slow-build", "running")

    def two_modules() -> bool:
        shown = subprocess.run(
            swell_cmd("logs", run_id, "--step", "build"),
            cwd=session.root / "project",
            env=session.env,
            capture_output=True,
            text=True,
            timeout=HANG,
        )
        return "compiling module 2" in shown.stdout

    wait_for(two_modules, timeout=HANG)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _slow(session: Session) -> None:
    _started(session, "slow")


def _stubborn(session: Session) -> None:
    _started(session, "stubborn")
    os.kill(session.background[-1].pid, signal.SIGSTOP)  # it cannot notice a cancel


def _ex2(session: Session) -> None:
    ex2 = session.root / "ex2"
    shutil.copytree(EXAMPLES, ex2, ignore=shutil.ignore_patterns(".swell"))
    manifest = ex2 / "wave.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "  planner:\n    adapter: local", "  planner:\n    adapter: claude"
        )
    )
    session.cwd = ex2


def _project(session: Session) -> None:
    session.cwd = None


def _empty(session: Session) -> None:
    session.cwd = session.root / "new"
    session.cwd.mkdir()


def _extra(session: Session) -> None:
    for name, text in EXTRA.items():
        (session.root / "project" / ".agents" / "pipelines" / f"{name}.yaml").write_text(text)


def _readme(session: Session) -> None:
    shutil.copytree(
        EXAMPLES, session.root / "repo" / "examples", ignore=shutil.ignore_patterns(".swell")
    )
    session.cwd = session.root / "repo"


# The sessions in the order their story runs: (block key, what to do before each of its
# commands by index). Keys are "file: first command".
Hooks = dict[int, Callable[[Session], None]]
SESSIONS: list[tuple[str, Hooks]] = [
    ("cli.md: swell init", {0: _empty}),
    ("cli.md: swell validate", {0: _project}),
    ("cli.md: swell list pipelines", {}),
    ("cli.md: swell list personas", {}),
    ("cli.md: swell list adapters", {}),
    ("cli.md: swell doctor", {}),
    ("cli.md: swell doctor #2", {0: _ex2}),
    ("cli.md: swell run loop --adapter foo", {0: _project, 2: _extra}),
    ("cli.md: swell run hello --dry-run --input 'add a greeting'", {}),
    ("README.md: cd examples", {0: _readme}),
    ("cli.md: swell run loop --input 'add a greeting'", {0: _project}),
    ("cli.md: swell run loop --from-step run-tests", {}),
    ("cli.md: swell run loop --input 'add a greeting' -o json", {}),
    ("cli.md: swell run loop --input x -o quiet", {}),
    ("cli.md: swell run loop -v --input y", {}),
    ("cli.md: swell run loop --detach --input 'in the background'", {1: _ended}),
    ("cli.md: swell run slow --timeout 2s", {}),
    ("cli.md: swell run review --input 'the login fix' </dev/null", {}),
    ("cli.md: swell status", {}),
    ("cli.md: swell approve review-20261124-024906-6d17c6a8 --choice ship", {}),
    ("cli.md: swell resume review-20261124-024906-6d17c6a8", {}),
    ("cli.md: swell thread review-20261124-024906-6d17c6a8 --budget 300", {}),
    ("cli.md: swell logs loop-20261124-023208-30daceee --errors", {}),
    ("cli.md: swell artifacts loop-20261124-023208-30daceee --step implement", {}),
    ("cli.md: swell status #2", {0: _slow_build}),
    ("cli.md: swell logs --follow --step build", {1: _slow_build_killed}),
    ("cli.md: swell cancel", {0: _slow, 1: _stubborn}),
    ("cli.md: swell list -n 6", {}),
    ("cli.md: swell clean --dry-run", {}),
]


def _keyed() -> dict[str, Block]:
    found: dict[str, Block] = {}
    for block in blocks():
        key, n = block.key, 2
        while key in found:
            key, n = f"{block.key} #{n}", n + 1
        found[key] = block
    return found


def test_every_example_in_the_docs_is_run_or_says_why_not() -> None:
    keys = set(_keyed())
    run = {key for key, _ in SESSIONS} | set(NOT_RUN) | set(_synopses())
    assert keys - run == set(), "examples in the docs that no test runs (add them to SESSIONS)"
    assert run - keys == set(), "SESSIONS names examples the docs no longer have"


def _synopses() -> dict[str, Block]:
    return {k: b for k, b in _keyed().items() if b.synopsis and k not in NOT_RUN}


@pytest.mark.parametrize("key", sorted(_synopses()))
def test_a_synopsis_in_the_docs_names_options_swell_has(key: str, tmp_path: Path) -> None:
    for shown_line in _synopses()[key].synopsis:
        line = shown_line.split("#")[0]  # a comment may name other commands
        words = shlex.split(line.replace("[", " ").replace("]", " "))
        words = words[words.index("swell") + 1 :]
        command = [w for w in words[:2] if re.fullmatch(r"[a-z]+", w)]
        command = command[:1] if len(command) == 2 and words[1] != command[1] else command
        shown = subprocess.run(
            swell_cmd(*command, "--help"),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=HANG,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert shown.returncode == 0, f"{line}: {shown.stderr}"
        for option in re.findall(r"(?<![\w-])--?[a-z][\w-]*", line):
            assert option in shown.stdout, f"{key}: `swell {' '.join(command)}` has no {option}"


@pytest.mark.slow
def test_the_docs_sessions_print_what_the_docs_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path
    shutil.copytree(EXAMPLES, root / "project", ignore=shutil.ignore_patterns(".swell"))
    monkeypatch.delenv("SWELL_STATE_DIR")  # state in the project's .swell, as a user has it
    home = root / "home"
    home.mkdir()
    path = os.pathsep.join(
        p
        for p in os.environ.get("PATH", "").split(os.pathsep)
        if not any((Path(p) / cli).exists() for cli in ("claude", "codex", "gemini", "opencode"))
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "CLAUDE_", "OPENAI_", "GEMINI_", "GOOGLE_"))
    }
    env.update(HOME=str(home), PATH=path, COLUMNS="200", NO_COLOR="1")
    session = Session(root, env)
    try:
        problems = _tell(session)
    finally:
        for proc in session.background:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert not problems, f"{len(problems)} examples print otherwise:\n\n" + "\n\n".join(problems)


def _tell(session: Session) -> list[str]:
    """Run the docs' sessions in SESSIONS' order; what printed otherwise."""
    keyed = _keyed()
    problems: list[str] = []
    for key, hooks in SESSIONS:
        block = keyed[key]
        for n, (text, expected) in enumerate(block.commands):
            if n in hooks:
                hooks[n](session)
            problem = session.run(text, expected)
            if problem:
                shown = "\n".join(f"    {line}" for line in expected)
                problems.append(f"{block.doc}:{block.line} `{text}` shows:\n{shown}\n{problem}")
    return problems
