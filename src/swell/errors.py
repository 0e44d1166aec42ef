"""The one exception tree of swell.

Every failure a user can cause is a `SwellError` with a message written for people;
the CLI prints it and exits non-zero, never with a traceback. Adapters translate
CLI/HTTP failures into `AgentError` subclasses at their boundary.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from typing import ClassVar, Literal

# what the engine, events and reviews call an agent's failure (AgentError.kind)
AgentErrorKind = Literal[
    "agent",  # swell could not run the agent as configured (unknown persona, bad options)
    "binary_missing",
    "auth",
    "rate_limit",
    "context_exhausted",
    "timeout",
    "crash",
    "unparseable_output",
]


class SwellError(Exception):
    """Base of every error swell reports to a user."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One problem in a manifest or pipeline file, located at file:line:col."""

    file: str
    line: int
    col: int
    message: str
    severity: str = "error"

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.col}" if self.line else self.file
        prefix = "" if self.severity == "error" else f"{self.severity}: "
        return f"{where}: {prefix}{self.message}"


class ManifestError(SwellError):
    """A manifest or pipeline file is invalid; carries every problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


class ProjectNotFound(SwellError):
    """No wave.yaml/swell.yaml in the current directory or any parent."""


class PipelineNotFound(SwellError):
    """The named pipeline has no file in the pipeline directories."""


class RunNotFound(SwellError):
    """No run with that id in the store."""


class RunStateError(SwellError):
    """The run exists but the operation does not fit its status."""


class RunBusy(RunStateError):
    """Another process is executing the run (`swell resume` twice, or resume and cancel)."""

    exit_code = 4


class StoreError(SwellError):
    """The state database (or the disk under a run's own files) cannot be opened or
    written."""


class StoreBroken(StoreError):
    """The store's file or disk failed (full, read-only, damaged, an I/O error):
    `problem` says what, naming the file, and `remedy` what the user does about it,
    then `then`."""

    def __init__(self, problem: str, remedy: str, then: str = "run the command again") -> None:
        self.problem, self.remedy, self.then = problem, remedy, then
        super().__init__(f"{problem}; {remedy}, then {then}" if then else f"{problem}; {remedy}")

    def stopped(self, run_id: str) -> StoreBroken:
        """The same failure, as the run it stopped reports it (the run stays resumable:
        the batch that failed was not written, and everything before it was)."""
        return type(self)(
            f"run {run_id} stopped: {self.problem}",
            f"nothing it recorded is lost; {self.remedy}",
            f"`swell resume {run_id}`",
        )


class StoreFull(StoreBroken):
    """The disk holding the store is full: nothing was half-written; free space and retry."""


class StoreReadOnly(StoreBroken):
    """The store's file or directory cannot be written by this user."""


class StoreDamaged(StoreBroken):
    """The store's file is corrupt (or not a database): it must be recovered or moved away."""

    def stopped(self, run_id: str) -> StoreBroken:
        return StoreDamaged(f"run {run_id} stopped: {self.problem}", self.remedy, self.then)


class DiskBroken(StoreBroken):
    """The disk holding a run's own files (its workspaces, its run directory) is full or
    read-only: the run stops resumable, as when the store's disk fails, and no step is
    failed for it."""


def disk_broken(exc: OSError, where: str | os.PathLike[str]) -> DiskBroken | None:
    """`exc`, failing to write `where`, as a DiskBroken when its disk is full or
    read-only; None for any other error."""
    path = os.fspath(where)
    said = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskBroken(
            f"cannot write {path}: the disk is full ({said})",
            f"free space on the disk holding {path}",
        )
    if exc.errno == errno.EROFS:
        return DiskBroken(
            f"cannot write {path}: its file system is read-only ({said})",
            f"make the disk holding {path} writable again",
        )
    return None


class AgentError(SwellError):
    """An agent adapter failed; `kind` is what the engine and events call it."""

    kind: ClassVar[AgentErrorKind] = "agent"


class BinaryMissing(AgentError):
    kind: ClassVar[AgentErrorKind] = "binary_missing"


class AuthFailed(AgentError):
    kind: ClassVar[AgentErrorKind] = "auth"


class RateLimited(AgentError):
    kind: ClassVar[AgentErrorKind] = "rate_limit"


class ContextExhausted(AgentError):
    kind: ClassVar[AgentErrorKind] = "context_exhausted"


class AgentTimeout(AgentError):
    kind: ClassVar[AgentErrorKind] = "timeout"


class AgentCrashed(AgentError):
    kind: ClassVar[AgentErrorKind] = "crash"


class UnparseableOutput(AgentError):
    kind: ClassVar[AgentErrorKind] = "unparseable_output"


# agent error kinds worth another try (step `retry`); the others would fail the same way
TRANSIENT_KINDS: tuple[AgentErrorKind, ...] = (RateLimited.kind, AgentTimeout.kind)


class AdapterUnknown(SwellError):
    """An adapter name is not registered."""
