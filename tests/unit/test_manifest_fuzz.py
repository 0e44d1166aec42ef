"""Property-based fuzzing of manifest and pipeline loading (docs/security.md, "Hostile input").

Cases start from the example project's own files and apply mutations: deleted keys, wrong
types, unicode, huge values, hostile names, aliases and alias bombs, duplicate keys, tabs,
binary bytes, invalid UTF-8, deep nesting, truncation. Each case is loaded and linted as
`swell validate` does, in process; a smaller number go through the real CLI. Either the
files are fine, or every problem is located at file:line:col: never another exception, a
hang or unbounded memory. Deterministic (derandomized), so CI sees the same cases.
"""

from __future__ import annotations

import copy
import math
import re
import resource
import shutil
import signal
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swell.errors import ManifestError, Problem, SwellError
from swell.manifest.lint import lint_pipeline, lint_project
from swell.manifest.loader import load_pipeline, load_project
from swell.runtime import open_registries

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
PIPELINES = sorted((EXAMPLES / ".agents" / "pipelines").glob("*.yaml"))

IN_PROCESS_PIPELINES = 700
IN_PROCESS_MANIFESTS = 300
THROUGH_CLI = 24
# a case that takes longer has hung: a bound for blow-ups only, never for a slow or
# busy machine (the pure-Python YAML parser under the fuzzer's tracer takes seconds)
CASE_SECONDS = 60
CASE_BYTES = 200 * 1024 * 1024  # traced peak of one case, in process
CLI_ADDRESS_SPACE = 1024 * 1024 * 1024  # RLIMIT_AS of `swell validate`

FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# ----------------------------------------------------------------------------- mutations

HOSTILE_NAMES = [
    "../../x",
    "/etc/passwd",
    "..",
    ".",
    "a/b",
    "a\\b",
    "nul\x00byte",
    "line\nbreak",
    "",
    "x" * 300,
]
ODD_SCALARS: list[Any] = [
    None,
    True,
    0,
    -1,
    2**64,
    10**40,
    1.5,
    math.inf,
    -math.inf,
    math.nan,
    "",
    " ",
    "{{",
    "{{ input",
    "{{ steps.x.outputs.y }}",
    "{% for x in y %}",
    "outcome=",
    "context.=1",
    "&& ||",
    "ü→🙂\u202e\u2028",
    "\ufeff",
    "x" * 100_000,
    [],
    {},
    [1, [2, [3]]],
    {"a": {"b": None}},
    *HOSTILE_NAMES,
]
BOMB = "\n".join(
    ['lol0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    + [f"lol{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)]
)


@dataclass
class Case:
    text: bytes
    steps: list[str]


def _paths(data: Any) -> list[tuple[Any, ...]]:
    """A path to every value inside `data`, each shared or recursive value once."""
    found: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    todo: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while todo:
        value, path = todo.pop()
        found.append(path)
        if not isinstance(value, dict | list) or id(value) in seen:
            continue
        seen.add(id(value))
        items = value.items() if isinstance(value, dict) else enumerate(value)
        todo.extend((item, (*path, key)) for key, item in items)
    return found


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = {"k": value} if i % 2 else [value]
    return value


def _fresh(value: Any) -> Any:
    """A copy of a drawn ODD_SCALARS value: its lists and dicts are shared by every
    case, and a later mutation would change them for the cases after it (hypothesis
    then sees the same draws build different data)."""
    return copy.deepcopy(value)


def mutate_data(draw: Callable[..., Any], data: Any, steps: list[str]) -> Any:
    """One structural mutation of the parsed document, in place."""
    paths = [p for p in _paths(data) if p]
    if not paths:
        return data
    path = draw(st.sampled_from(paths))
    parent, last = _parent(data, path), path[-1]
    kind = draw(
        st.sampled_from(
            ["delete", "retype", "text", "unknown", "nest", "repeat", "name", "share", "self"]
        )
    )
    steps.append(f"{kind} {'.'.join(map(str, path))}")
    if kind == "delete":
        del parent[last]
    elif kind == "retype":
        parent[last] = _fresh(draw(st.sampled_from(ODD_SCALARS)))
    elif kind == "text":
        parent[last] = draw(st.text(max_size=40))
    elif kind == "unknown" and isinstance(parent, dict):
        parent[draw(st.text(min_size=1, max_size=12))] = _fresh(draw(st.sampled_from(ODD_SCALARS)))
    elif kind == "nest":
        parent[last] = _nested(draw(st.integers(1, 40)))
    elif kind == "repeat" and isinstance(parent, list):
        parent.append(parent[last])
    elif kind == "name":
        parent[last] = draw(st.sampled_from(HOSTILE_NAMES))
    elif kind == "share":  # the dumper writes an anchor and an alias
        other = draw(st.sampled_from(paths))
        parent[last] = _parent(data, other)[other[-1]]
    elif kind == "self" and isinstance(parent, dict | list):  # an alias inside its anchor
        parent[last] = parent
    return data


def _insert(draw: Callable[..., Any], raw: bytes, piece: bytes) -> bytes:
    at = draw(st.integers(0, len(raw)))
    return raw[:at] + piece + raw[at:]


def mutate_text(draw: Callable[..., Any], raw: bytes, steps: list[str]) -> bytes:
    """One mutation of the file's bytes."""
    kind = draw(
        st.sampled_from(
            [
                "truncate",
                "tab",
                "binary",
                "invalid-utf8",
                "nul",
                "duplicate-line",
                "deep-flow",
                "deep-block",
                "bomb",
                "small-bomb",
                "self-alias",
                "alias",
                "tag",
                "unicode",
                "huge-int",
            ]
        )
    )
    steps.append(kind)
    lines = raw.split(b"\n")
    if kind == "truncate":
        return raw[: draw(st.integers(0, len(raw)))]
    if kind == "tab":
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = b"\t" + lines[i].lstrip(b" ")
        return b"\n".join(lines)
    if kind == "binary":
        return _insert(draw, raw, draw(st.binary(min_size=1, max_size=16)))
    if kind == "invalid-utf8":
        return _insert(draw, raw, draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80"])))
    if kind == "nul":
        return _insert(draw, raw, b"\x00")
    if kind == "duplicate-line":
        i = draw(st.integers(0, len(lines) - 1))
        return b"\n".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
    if kind == "deep-flow":
        n = draw(st.sampled_from([10, 63, 64, 65, 500, 5_000, 50_000]))
        return raw + b"\nx-deep: " + b"[" * n + b"]" * n + b"\n"
    if kind == "deep-block":
        n = draw(st.sampled_from([30, 65, 300]))
        return raw + b"\nx-deep:\n" + b"".join(b" " * i + b"- \n" for i in range(1, n)) + b"\n"
    if kind == "bomb":
        return BOMB.encode() + b"\n" + raw
    if kind == "small-bomb":  # 9**5 values: under the limit, handed to validation whole
        # in a field swell ignores, so loading succeeds and lint sees the rest
        ignored = b"ontology" if b"WaveManifest" in raw else b"chat_context"
        levels = "\n".join("  " + level for level in BOMB.split("\n")[:5]).encode()
        return raw + b"\n" + ignored + b":\n" + levels + b"\n  use: *a4\n"
    if kind == "self-alias":
        return raw + b"\nx-self: &me [1, *me]\n"
    if kind == "alias":
        return b"x-anchor: &anchor {id: a, script: echo}\n" + raw + b"\nx-use: *anchor\n"
    if kind == "tag":
        tag = draw(
            st.sampled_from(
                [
                    b"!!python/object/apply:os.system ['touch PWNED']",
                    b"!!binary aGk=",
                    b"!!timestamp 2024-13-45",
                    b"!!float nope",
                    b"!custom x",
                    b"!!set {a, b}",
                ]
            )
        )
        return raw + b"\nx-tag: " + tag + b"\n"
    if kind == "unicode":
        piece = draw(st.text(min_size=1, max_size=8)).encode("utf-8", "surrogatepass")
        return _insert(draw, raw, piece)
    return raw + b"\nx-int: " + b"9" * draw(st.sampled_from([20, 4300, 5000])) + b"\n"


@st.composite
def cases(draw: Callable[..., Any], seeds: list[Path]) -> Case:
    seed = draw(st.sampled_from(seeds))
    steps = [seed.name]
    data = yaml.safe_load(seed.read_text(encoding="utf-8"))
    for _ in range(draw(st.integers(0, 3))):
        data = mutate_data(draw, data, steps)
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False, width=1_000_000)
    raw = text.encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 2))):
        raw = mutate_text(draw, raw, steps)
    return Case(raw, steps)


# ----------------------------------------------------------------------------- checking


class Hung(Exception):
    pass


@contextmanager
def bounded(seconds: float, peak_bytes: int) -> Iterator[None]:
    """Fail a case that takes longer than `seconds` or allocates more than `peak_bytes`."""

    def alarm(signum: int, frame: object) -> None:
        raise Hung(f"no answer within {seconds}s")

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    tracemalloc.start()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
        assert peak < peak_bytes, f"peak {peak / 1e6:.0f} MB"
    finally:
        tracemalloc.stop()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def assert_located(problems: list[Problem], case: Case) -> None:
    for p in problems:
        assert p.line >= 1 and p.col >= 1, f"{p} has no position ({case.steps})"
        assert p.file.endswith(".yaml"), f"{p} names no file ({case.steps})"


def validate_in_process(root: Path, pipeline: str, case: Case) -> str:
    """What `swell validate NAME` does: load and lint the project and the pipeline.
    Returns how it ended: "ok", "lint" (loaded, lint found errors) or "refused"."""
    outcome = "ok"
    with bounded(CASE_SECONDS, CASE_BYTES):
        try:
            project = load_project(root)
            ctx = open_registries().lint_context()
            problems = list(lint_project(project, ctx).problems)
            problems += lint_pipeline(project, load_pipeline(root, pipeline), ctx).problems
            if any(p.severity == "error" for p in problems):
                outcome = "lint"
        except ManifestError as exc:
            outcome, problems = "refused", exc.problems
            assert problems, f"a ManifestError without problems ({case.steps})"
        except SwellError as exc:  # pragma: no cover - a failure with its reason
            pytest.fail(f"{type(exc).__name__} without a position: {exc} ({case.steps})")
    assert_located(problems, case)
    return outcome


@pytest.fixture(scope="module")
def fuzz_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fuzz") / "project"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".swell"))
    return root


# cases tried per test, by how they ended
TRIED: dict[str, dict[str, int]] = {}


def tried(test: str, outcome: str) -> None:
    counts = TRIED.setdefault(test, {})
    counts[outcome] = counts.get(outcome, 0) + 1


@pytest.mark.slow  # 30-42 s each at load 7 on two cores
@settings(FUZZ, max_examples=IN_PROCESS_PIPELINES)
@given(case=cases(PIPELINES))
def test_mutated_pipelines_load_or_fail_located(fuzz_project: Path, case: Case) -> None:
    (fuzz_project / ".agents" / "pipelines" / "fuzz.yaml").write_bytes(case.text)
    tried("pipelines", validate_in_process(fuzz_project, "fuzz", case))


@pytest.mark.slow  # 30-42 s each at load 7 on two cores
@settings(FUZZ, max_examples=IN_PROCESS_MANIFESTS)
@given(case=cases([EXAMPLES / "wave.yaml"]))
def test_mutated_manifests_load_or_fail_located(fuzz_project: Path, case: Case) -> None:
    manifest = fuzz_project / "wave.yaml"
    original = (EXAMPLES / "wave.yaml").read_bytes()
    manifest.write_bytes(case.text)
    try:
        tried("manifests", validate_in_process(fuzz_project, "loop", case))
    finally:
        manifest.write_bytes(original)


PROBLEM_LINE = re.compile(r"^\S.*:\d+:\d+: \S")
SUMMARY_LINE = re.compile(r"^\d+ (errors?|problems?) found$")


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CLI_ADDRESS_SPACE, CLI_ADDRESS_SPACE))


@pytest.mark.slow  # 30-42 s each at load 7 on two cores
@settings(FUZZ, max_examples=THROUGH_CLI)
@given(case=cases(PIPELINES))
def test_mutated_pipelines_through_the_cli(
    fuzz_project: Path, isolated_state: Path, case: Case
) -> None:
    (fuzz_project / ".agents" / "pipelines" / "fuzz.yaml").write_bytes(case.text)
    result = subprocess.run(
        [sys.executable, "-m", "swell", "validate", "fuzz"],
        cwd=fuzz_project,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=30,
        stdin=subprocess.DEVNULL,
        preexec_fn=_limit_memory,
    )
    assert result.returncode in (0, 1), (case.steps, result.returncode, result.stderr[-2000:])
    tried("cli", "ok" if result.returncode == 0 else "errors")
    assert "Traceback" not in result.stderr, case.steps
    if result.returncode == 1:
        lines = result.stderr.splitlines()
        assert lines and SUMMARY_LINE.match(lines[-1]), (case.steps, result.stderr[-2000:])
        for line in lines[:-1]:
            assert PROBLEM_LINE.match(line), (case.steps, line)
    else:
        assert result.stdout.startswith("ok: "), case.steps


def test_report_how_many_cases_were_tried(capsys: pytest.CaptureFixture[str]) -> None:
    """Not a check: prints the counts (`pytest -s` shows them)."""
    with capsys.disabled():
        print(f"\nfuzz cases tried: {TRIED}")
