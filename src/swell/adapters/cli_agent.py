"""What the adapters that run an agent CLI share (claude, codex, gemini, opencode).

`CliAdapter.run` finds the binary, starts one process per visit through
`swell.process.StreamedProcess`, feeds its stdout line by line to the adapter's
`CliStream` and ends with that stream's AgentResult. A CLI adapter keeps only what is
its own: `launch()` (the argv, the environment and any files the visit needs) and a
`CliStream` subclass (its output lines -> AgentEvents, and the final AgentResult).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel

from swell import sandbox
from swell.adapters.base import (
    AdapterSetup,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    Capabilities,
    Usage,
    total_usage,
)
from swell.adapters.tool_results import ToolResults
from swell.errors import AgentCrashed, AgentError, AgentTimeout, BinaryMissing
from swell.process import ProcessResult, StreamedProcess, stop_marked

OptionsT = TypeVar("OptionsT", bound=BaseModel)


class CliStream(ABC):
    """One visit's stdout: `feed` every line, then `flush`, then `finish` once.

    Holds what every CLI's parser tracks (session, unreadable lines, files changed)
    and the helpers they use to read JSON events."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace.resolve()
        self.session_id: str | None = None
        self.bad_lines: list[str] = []  # the first 200 characters of each line that was no event
        self.files: list[str] = []  # files_changed, relative to the workspace where inside it
        self.tools = ToolResults()  # tool calls waiting for their results

    @abstractmethod
    def feed(self, line: str) -> Iterable[AgentEvent]:
        """The events one stdout line (without its newline) reports."""

    def flush(self) -> Iterable[AgentEvent]:
        """Events held back until the output ended (a CLI that streams text in pieces)."""
        return ()

    @abstractmethod
    def finish(self, proc: ProcessResult, request: AgentRequest) -> AgentResult:
        """The visit's result once the process has ended (or the timeout ended it)."""

    def decode(self, line: str, *, typed: bool = True) -> dict[str, Any] | None:
        """The JSON object on `line`, or None: blank lines are skipped, anything else
        is kept in bad_lines. `typed`: an object needs a string `type` to count."""
        if not line.strip():
            return None
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict) or (typed and not isinstance(data.get("type"), str)):
            self.bad_lines.append(line[:200])
            return None
        return data

    def relative(self, path: str) -> str:
        """`path` relative to the workspace when it is inside it, else as given."""
        full = (self.workspace / path).resolve()
        return (
            str(full.relative_to(self.workspace)) if full.is_relative_to(self.workspace) else path
        )

    def target(self, args: dict[str, Any], keys: Iterable[str]) -> str | None:
        """A tool call's target: the first of `keys` its arguments hold (a path made
        workspace-relative, anything else cut to 200 characters)."""
        for key in keys:
            value = args.get(key)
            if isinstance(value, str) and value:
                return self.relative(value) if key.lower().endswith("path") else value[:200]
        return None

    def add_file(self, path: str) -> None:
        if path not in self.files:
            self.files.append(path)

    def fields(self, usage: Usage, text: str) -> dict[str, Any]:
        """What every result of the visit carries, whether it succeeded or not."""
        return {
            "usage": usage,
            "session_id": self.session_id,
            "files_changed": self.files,
            "text": text,
        }


def ended(error: AgentError | None, fields: dict[str, Any]) -> AgentResult:
    """The visit's result: failed with `error`, else a success."""
    return AgentResult.failed(error, **fields) if error else AgentResult(success=True, **fields)


def by_words(
    message: str, table: Iterable[tuple[Iterable[str], type[AgentError]]], text: str = ""
) -> AgentError:
    """The class of the first row of `table` one of whose words `text` (else `message`)
    holds, lower-cased; AgentCrashed when none does."""
    low = (text or message).lower()
    for words, cls in table:
        if any(word in low for word in words):
            return cls(message)
    return AgentCrashed(message)


def exited(name: str, proc: ProcessResult) -> str:
    """Why a CLI that printed no result ended: its exit code and the end of its output."""
    end = tail(proc.stderr) or tail(proc.stdout)
    return f"{name} exited with code {proc.exit_code} without a result" + (
        f": {end}" if end else ""
    )


@dataclass(frozen=True)
class Launch:
    """How one visit's CLI is started, and the stream that reads what it prints."""

    argv: list[str]
    env: dict[str, str]
    stream: CliStream
    stdin: str  # the prompt: every CLI reads it from stdin, which is then closed


class CliAdapter(ABC, Generic[OptionsT]):
    """An AgentAdapter that runs an agent CLI once per visit.

    A subclass sets `Options`, `name`, `capabilities`, `env_passthrough`, `npm_package`
    (and `visit_marker` if its CLI hands its environment on to the commands it runs)
    and implements `launch`."""

    Options: type[OptionsT]
    name: str  # also the default binary, and the first word of its messages
    capabilities: Capabilities
    env_passthrough: tuple[str, ...]
    npm_package: ClassVar[str]  # what the missing-binary message says to install
    # set to a fresh token per visit: commands the agent left running afterwards (`cmd &`,
    # or in a process group of their own) still carry it, so they are found and stopped
    visit_marker: ClassVar[str | None] = None

    def __init__(self, setup: AdapterSetup) -> None:
        self.options: OptionsT = self.Options.model_validate(setup.options)
        self.setup_name = setup.name
        self.binary = setup.binary or self.name
        self.root = setup.project_root
        if key_env := getattr(self.options, "api_key_env", None):  # base_url's key
            self.env_passthrough = (*type(self).env_passthrough, key_env)

    @abstractmethod
    def launch(self, binary: str, request: AgentRequest, scratch: Path) -> Launch:
        """The process of one visit; `binary` is resolved, `scratch` is a directory for
        files the visit needs (removed once the process has ended)."""

    def resolve(self, request: AgentRequest) -> str | None:
        """The binary's path: `~` expanded, a relative path taken from the project root,
        a bare name looked up on the PATH the agent will get."""
        binary = os.path.expanduser(self.binary)
        if os.sep in binary and not os.path.isabs(binary):
            binary = str(self.root / binary)
        return shutil.which(binary, path=request.env.get("PATH", os.environ.get("PATH")))

    def missing(self, detail: str) -> AgentFinished:
        missing = BinaryMissing(
            f"{self.name}: {detail}; install it with `npm install -g {self.npm_package}` "
            f"or set adapters.{self.setup_name}.binary"
        )
        return AgentFinished(AgentResult.failed(missing))

    async def run(self, request: AgentRequest) -> AsyncIterator[AgentEvent]:
        binary = self.resolve(request)
        if binary is None:
            yield self.missing(f"binary '{self.binary}' not found")
            return
        token = uuid.uuid4().hex
        # in a sandboxed visit, where its process can see it (its /tmp is its own)
        where = sandbox.scratch_root()
        with tempfile.TemporaryDirectory(prefix=f"swell-{self.name}-", dir=where) as scratch:
            launch = self.launch(binary, request, Path(scratch))
            env = launch.env
            if self.visit_marker is not None:
                env = {**env, self.visit_marker: token}
            proc = StreamedProcess(
                launch.argv,
                cwd=request.workspace,
                env=env,
                timeout=request.timeout_s,
                stdin_data=launch.stdin.encode(),
                inherit_env=self.env_passthrough,
            )
            lines = proc.lines()
            try:
                async for line in lines:
                    for event in launch.stream.feed(line):
                        yield event
            except OSError as exc:  # gone since resolve(), not executable, or its #! is missing
                if isinstance(exc, FileNotFoundError):
                    yield self.missing(f"cannot run {binary}")
                else:
                    crashed = AgentCrashed(f"{self.name}: cannot run {binary}: {exc}")
                    yield AgentFinished(AgentResult.failed(crashed))
                return
            finally:
                if isinstance(lines, AsyncGenerator):  # ends the CLI's group if we stop early
                    await lines.aclose()
                if self.visit_marker is not None:
                    await stop_marked([f"{self.visit_marker}={token}"])
        for event in launch.stream.flush():
            yield event
        assert proc.result is not None
        yield AgentFinished(launch.stream.finish(proc.result, request))


def timed_out(name: str, request: AgentRequest) -> AgentTimeout:
    return AgentTimeout(f"{name}: no result within {request.timeout_s or 0:g}s")


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def dicts(value: Any) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def tail(text: str, limit: int = 2000) -> str:
    """The end of a CLI's output, which is where it explains a failure."""
    return text.strip()[-limit:]


__all__ = [
    "CliAdapter",
    "CliStream",
    "Launch",
    "as_dict",
    "by_words",
    "dicts",
    "ended",
    "exited",
    "tail",
    "timed_out",
    "total_usage",
]
