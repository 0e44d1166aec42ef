"""`type: non_empty_file`: the file at `source` holds real content.

Fails, each with its own message, when the file is missing, is a directory, is
empty, holds only whitespace, or is an "error JSON" — an object whose only
meaningful content is an error (`{"error": "rate limited"}`, `{"errors": [...]}`),
which is what a tool that failed often writes where its output should be.

`source` (default, as in Wave: the step's first output artifact) is a template
(`{{ artifacts.report }}` works) naming a path in the step's
workspace; relative paths are taken from the workspace, absolute ones must lie in
it, and nothing may leave it (symlinks included).
"""

from __future__ import annotations

import codecs
import json
import re
from pathlib import Path
from typing import Any

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.workspace.paths import PathEscape, inside

CHUNK = 64 * 1024
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


def _blank(path: Path) -> bool:
    """True if the file holds only whitespace; reads only until the first content."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
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
        return _check(ctx)


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
        if not path.exists():
            return _failed(f"{name} does not exist (the step did not write it)", path)
        if not path.is_file():
            return _failed(f"{name} is not a file", path)
        size = path.stat().st_size
        if size == 0:
            return _failed(f"{name} is empty", path)
        if _blank(path):
            return _failed(f"{name} contains only whitespace", path)
        if size <= ERROR_JSON_LIMIT:
            text = path.read_bytes().decode("utf-8-sig", errors="replace").strip()
            if text.startswith("{"):
                try:
                    data = json.loads(text)
                except ValueError:
                    data = None
                message = error_json(data)
                if message is not None:
                    return _failed(f"{name} holds only an error, not content: {message}", path)
    except OSError as exc:
        return _failed(f"cannot read {name}: {exc.strerror or exc}", path)
    return ContractResult(passed=True, details={"path": str(path), "size": size})


TYPE = NonEmptyFile()
