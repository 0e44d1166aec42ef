"""`type: non_empty_file`: the file at `source` holds real content.

Fails, each with its own message, when the file is missing, is a directory, is
empty, holds only whitespace, or is an "error JSON" — an object whose only
meaningful content is an error (`{"error": "rate limited"}`, `{"errors": [...]}`),
which is what a tool that failed often writes where its output should be.

`source` (default, as in Wave: the step's first output artifact) is a template
(`{{ artifacts.report }}` works) naming a path in the step's
workspace; relative paths are taken from the workspace, absolute ones must lie in
it, and nothing may leave it (symlinks included). What is read there must be a
regular file: a FIFO, a socket or a device is refused, never opened, and at most
MAX_READ bytes are read (workspace/safe.py); every file contract reads this way.
"""

from __future__ import annotations

import codecs
import json
import os
import re
from pathlib import Path
from typing import Any

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.workspace import safe
from swell.workspace.offload import off_loop
from swell.workspace.paths import PathEscape, inside

CHUNK = 64 * 1024
MAX_READ = 50 * 1024 * 1024  # the most a contract reads of a file the step wrote
ERROR_JSON_LIMIT = 1024 * 1024  # larger files are content, whatever they start with
_BLANK = re.compile(r"[\s\ufeff\u200b]*")  # whitespace, a byte-order mark, zero-width space

# keys that carry an error, and keys that only describe one
ERROR_KEYS = frozenset({"error", "errors", "error_message", "errormessage", "exception"})
ERROR_META_KEYS = frozenset(
    {
        "message",
        "msg",
        "code",
        "status",
        "status_code",
        "statuscode",
        "detail",
        "details",
        "type",
        "reason",
        "success",
        "ok",
        "error_code",
        "error_type",
        "error_description",
        "request_id",
        "requestid",
        "timestamp",
        "trace",
        "traceback",
    }
)


class NonEmptyFileSettings(ContractSettings):
    source: str | None = None


def workspace_path(ctx: ContractContext[Any], raw: str, what: str = "source") -> Path:
    """The workspace path a templated `raw` names (a relative one from `outputs_dir`);
    PathEscape if it leaves the workspace."""
    text = ctx.render(raw).strip()
    if not text:
        raise PathEscape(f"{what} {raw!r} renders to an empty path")
    if Path(text).is_absolute():
        root, target = ctx.workspace.resolve(), Path(text).resolve()
        if target != root and root not in target.parents:
            raise PathEscape(f"{what} {text!r} is outside the step's workspace")
        return target
    start = ctx.outputs_dir or ctx.workspace
    try:
        return inside(ctx.workspace, str(start.relative_to(ctx.workspace) / text))
    except (PathEscape, ValueError):
        raise PathEscape(f"{what} {text!r} escapes the step's workspace") from None


def shown(path: Path, ctx: ContractContext[Any]) -> str:
    """`path` as a user reads it: relative to the workspace when it is inside."""
    try:
        return str(path.relative_to(ctx.workspace.resolve()))
    except ValueError:
        return str(path)


class FileProblem(ValueError):
    """Why a file a contract checks cannot be read, the file named as users see it."""


def problem(name: str, exc: safe.Unreadable | OSError) -> FileProblem:
    """`exc` about the file `name`, in the words every file contract uses."""
    if isinstance(exc, safe.Unreadable):
        why = exc.reason
        if why == "does not exist":
            why += " (the step did not write it)"
        return FileProblem(f"{name} {why}")
    return FileProblem(f"cannot read {name}: {exc.strerror or exc}")


def read_file(path: Path, name: str, limit: int = MAX_READ) -> bytes:
    """The content of `path`, a regular file of at most `limit` bytes (`name` in
    messages); FileProblem saying why not. Blocking: call it off the event loop."""
    try:
        return safe.read_limited(path, limit)
    except (safe.Unreadable, OSError) as exc:
        raise problem(name, exc) from None


def error_json(data: Any) -> str | None:
    """The error text when `data` is an object holding nothing but an error."""
    if not isinstance(data, dict) or not data:
        return None
    meaningful = {k: v for k, v in data.items() if v not in (None, "", [], {})}
    keys = {str(k).lower() for k in meaningful}
    errors = [k for k, v in meaningful.items() if str(k).lower() in ERROR_KEYS and v]
    if not errors or not keys <= ERROR_KEYS | ERROR_META_KEYS:
        return None
    text = json.dumps(data, ensure_ascii=False, default=str)
    return text if len(text) <= 200 else text[:199] + "…"


def _blank(fd: int) -> bool:
    """True if the file holds only whitespace (in its first MAX_READ bytes); reads only
    until the first content."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    left = MAX_READ
    while left > 0 and (chunk := os.read(fd, min(CHUNK, left))):
        left -= len(chunk)
        if not _BLANK.fullmatch(decoder.decode(chunk)):
            return False
    return bool(_BLANK.fullmatch(decoder.decode(b"", final=True)))


def _failed(error: str, path: Path | None = None) -> ContractResult:
    return ContractResult(
        passed=False, error=error, details={"path": str(path)} if path is not None else {}
    )


class NonEmptyFile(ContractType[NonEmptyFileSettings]):
    name = "non_empty_file"
    Settings = NonEmptyFileSettings

    def problems(self, settings: NonEmptyFileSettings, scope: LintScope) -> list[Problem]:
        if settings.source or default_source(scope.step):
            return []
        return [
            scope.problem(
                (), "a non_empty_file contract needs `source` (or a step output artifact)"
            )
        ]

    async def check(self, ctx: ContractContext[NonEmptyFileSettings]) -> ContractResult:
        return await off_loop(lambda: _check(ctx))


def default_source(step: Step) -> str | None:
    """What a contract without `source` checks, as in Wave: the path of the step's
    first output artifact."""
    first = step.output_artifacts[0] if step.output_artifacts else None
    return first.path if first is not None and first.path else None


def _check(ctx: ContractContext[NonEmptyFileSettings]) -> ContractResult:
    source = ctx.settings.source or default_source(ctx.step)
    if not source:
        return _failed(
            "non_empty_file contract needs `source` (the file to check), or the step an "
            "output artifact"
        )
    try:
        path = workspace_path(ctx, source)
    except PathEscape as exc:
        return _failed(str(exc))
    name = shown(path, ctx)
    try:
        fd = safe.open_regular(path)
        try:
            size = os.fstat(fd).st_size
            if size == 0:
                return _failed(f"{name} is empty", path)
            if _blank(fd):
                return _failed(f"{name} contains only whitespace", path)
        finally:
            os.close(fd)
        if size <= ERROR_JSON_LIMIT:
            text = read_file(path, name).decode("utf-8-sig", errors="replace").strip()
            if text.startswith("{"):
                try:
                    data = json.loads(text)
                except ValueError:
                    data = None
                message = error_json(data)
                if message is not None:
                    return _failed(f"{name} holds only an error, not content: {message}", path)
    except (safe.Unreadable, OSError) as exc:
        return _failed(str(problem(name, exc)), path)
    except FileProblem as exc:
        return _failed(str(exc), path)
    return ContractResult(passed=True, details={"path": str(path), "size": size})


TYPE = NonEmptyFile()
