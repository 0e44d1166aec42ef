"""A bench dataset: SWE-bench-format JSONL, one task a line.

Each line is a JSON object with `instance_id`, `repo` (a local path, relative to the
dataset file, or a git URL), `base_commit`, `problem_statement`, `FAIL_TO_PASS` and
`PASS_TO_PASS` (lists of pytest node ids, or JSON texts of such lists, as SWE-bench
ships them), and optionally `test_command`, `setup` (shell commands) and `patch` (the
gold patch). A bad line is an error naming file:line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from swell.errors import SwellError


class DatasetError(SwellError):
    """A dataset file that cannot be read, or a line that is not a task."""


class Task(BaseModel):
    """One task: a repository at a commit, a problem, and the tests that grade it."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)

    instance_id: str = Field(min_length=1)
    repo: str = Field(min_length=1)
    base_commit: str = Field(min_length=1)
    problem_statement: str
    fail_to_pass: list[str] = Field(alias="FAIL_TO_PASS", min_length=1)
    pass_to_pass: list[str] = Field(alias="PASS_TO_PASS", default_factory=list)
    test_command: str | None = None
    setup: list[str] = Field(default_factory=list)
    patch: str | None = None  # the gold patch

    @field_validator("fail_to_pass", "pass_to_pass", mode="before")
    @classmethod
    def _listed(cls, value: Any) -> Any:
        # SWE-bench's own files keep the lists as JSON texts
        if isinstance(value, str):
            try:
                return json.loads(value)
            except json.JSONDecodeError:
                raise ValueError("must be a list of test ids (or a JSON text of one)") from None
        return value

    @field_validator("setup", mode="before")
    @classmethod
    def _commands(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    def line(self) -> str:
        """The task as a dataset line (SWE-bench's field names)."""
        data = self.model_dump(by_alias=True, exclude_none=True)
        if not data.get("setup"):
            data.pop("setup", None)
        return json.dumps(data, ensure_ascii=False)


class Dataset(BaseModel):
    """The tasks of one file, in file order; `root` is the directory relative repos start from."""

    path: Path
    tasks: list[Task]

    @property
    def root(self) -> Path:
        return self.path.parent

    def repo_location(self, task: Task) -> str:
        """A local repo as an absolute path (relative to the dataset file); a URL as is."""
        if "://" in task.repo or task.repo.startswith("git@"):
            return task.repo
        return str((self.root / task.repo).resolve())


def load_dataset(path: Path) -> Dataset:
    """Read and check every line; DatasetError names each bad one (file:line: why)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"cannot read dataset {path}: {exc}") from None
    tasks: list[Task] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            task = Task.model_validate_json(line)
        except ValidationError as exc:
            problems.append(f"{where}: {_why(exc)}")
            continue
        if task.instance_id in seen:
            problems.append(
                f"{where}: instance_id '{task.instance_id}' is on line {seen[task.instance_id]} too"
            )
            continue
        seen[task.instance_id] = number
        tasks.append(task)
    if problems:
        raise DatasetError("\n".join(problems))
    if not tasks:
        raise DatasetError(f"{path}: no tasks")
    return Dataset(path=path, tasks=tasks)


def _why(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        if error["type"] == "json_invalid":
            return f"not a JSON object ({error['msg']})"
        field = ".".join(str(p) for p in error["loc"]) or "line"
        msg = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{field}: {msg[:1].lower()}{msg[1:]}")
    return "; ".join(parts)
