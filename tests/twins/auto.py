"""The "auto twin": a stand-in model that answers any step of any pipeline.

Instead of a script, `AutoModel` reads each request and decides the next move from
the conversation so far, so it holds no state between the turns of one agent. One
decision core serves every protocol: a module per wire format (twins/auto_wire/:
Anthropic Messages for Claude Code, OpenAI Responses for Codex, Chat Completions for
opencode, the Gemini API for the Gemini CLI) reads the request into a `Conversation`
and writes the core's `Move` back in that CLI's own tools. The core:

- a reviewer or judge (the CLI asks for a structured answer: Claude Code's
  `StructuredOutput` tool, Codex's `--output-schema`) gets an answer built from that
  schema, with passing verdicts (`verdict: pass`, every `pass: true`); with
  `fail_first_review` the first review or judge of each step fails instead, so rework
  and retry paths run. Asked for the verdict in its answer text instead (CLIs without
  schema support), it answers with Wave's shapes;
- a worker is asked, in swell's "## Output artifacts" section of the prompt, for
  files: it writes each one with the CLI's file tool. A JSON output gets a minimal document
  its contract's schema accepts: the schema is taken from the prompt when the prompt
  carries one, otherwise read from the project's own pipeline files (the contract's
  `schema_path`), and each time that happens is counted (`Tally.schemas_from_project`):
  a prompt without its schema is one a real model would have to guess at. An example
  document the prompt shows for the file is written instead when it fits;
- when the prompt asks for a commit it runs `git add -A && git commit` in the shell;
- then it ends its turn with a short text.

`Tally` counts what it did; `decisions` keeps one line per model call for reports.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from twins.auto_wire import anthropic, chat, gemini, responses
from twins.auto_wire.base import Action, Call, Conversation, Move, Read, Shell, Write
from twins.schema_sample import NO_PREFERENCE, sample, valid
from twins.server import Reply, Request

MAX_TURNS = 8  # assistant turns in one agent run before the twin just finishes
OUTPUT_HEADING = re.compile(r"^#+\s*Output artifacts?\s*$", re.I | re.M)
OUTPUT_LINE = re.compile(r"^\s*[-*]\s*`([^`]+)`\s*\(([^;)]+)(?:;\s*(\w+))?(?:,\s*([\w-]+))?\)")
COMMIT_ASK = re.compile(r"\bgit commit\b|\bcommit (?:your|the|all|these)\b", re.I)
JUDGE_CRITERION = re.compile(r"^\d+\. (.+)$", re.M)
STEP_NAME = re.compile(r"step `([^`]+)`")
INPUT_HEADING = re.compile(r"^#+\s*Input artifacts?\s*$", re.I | re.M)
INPUT_LINE = re.compile(r"^\s*[-*]\s*([^:`]+):\s*`([^`]+)`")


@dataclass
class Output:
    path: str
    name: str
    type: str | None = None


@dataclass
class Tally:
    agent_calls: int = 0
    files_written: int = 0
    schemas_from_prompt: int = 0
    schemas_from_project: int = 0
    schemas_missing: int = 0  # a JSON output no schema was found for
    examples_used: int = 0  # JSON outputs written as the prompt's own example document
    invalid_samples: int = 0  # a generated document its schema does not accept
    reviews: int = 0
    judges: int = 0
    failed_verdicts: int = 0
    commits: int = 0
    tool_errors: int = 0  # tool results Claude Code marked as errors (refused, failed)
    unrendered_paths: int = 0  # output paths still holding `{{ ... }}`
    inputs_listed: int = 0  # input artifacts prompts listed (see AutoModel.missing_inputs)


@dataclass
class AutoModel:
    """Pass as the `replies` of a `Twin` (one per run, or share one across runs)."""

    project_root: Path | None = None
    fail_first_review: bool = False
    tally: Tally = field(default_factory=Tally)
    decisions: list[str] = field(default_factory=list)
    tool_errors: list[str] = field(default_factory=list)  # "Tool target: result"
    # where each JSON output's schema came from: (path, "prompt" | "project" | "none")
    schema_sources: list[tuple[str, str]] = field(default_factory=list)
    # input artifacts a prompt listed that were not there when the agent started
    missing_inputs: list[str] = field(default_factory=list)
    _failed: set[tuple[str, str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _schemas: ProjectSchemas | None = None

    def __call__(self, req: Request) -> Reply:
        body = req.body if isinstance(req.body, dict) else {}
        wire = protocol(getattr(req, "path", ""))
        conversation = wire.read(body)
        if conversation.side_call:
            return Reply(text="ok", usage={"input_tokens": 1, "output_tokens": 1})
        with self._lock:
            self.tally.agent_calls += 1
            move, note = self._decide(conversation)
            self.decisions.append(note)
        if wire is responses:
            return responses.reply(move, body)
        return wire.reply(move)  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ deciding

    def _decide(self, talk: Conversation) -> tuple[Move, str]:
        for call in talk.calls:
            if call.error and call.fresh:
                self.tally.tool_errors += 1
                self.tool_errors.append(f"{call.name} {call.target or ''}: {call.result[:200]}")
        prompt = talk.prompt
        if talk.answer_schema is not None:
            return self._structured(prompt, talk.answer_schema, talk.calls, talk.turns)
        outputs = output_artifacts(prompt)
        asked = None if outputs else _asked_verdict(prompt)
        if asked:
            return self._in_text(asked, prompt, talk.system)
        if talk.turns == 0:
            self._check_inputs(prompt, talk.workdir)
        if talk.turns >= MAX_TURNS:
            return Move(text="Stopping: turn limit of the twin."), "finish (turn limit)"
        writes = self._writes(prompt, outputs, talk.calls)
        if writes:
            paths = ", ".join(a.path for a in writes if isinstance(a, Write))
            return Move(actions=writes), f"write {paths}"
        committed = any(c.kind == "shell" and "git commit" in (c.target or "") for c in talk.calls)
        if COMMIT_ASK.search(prompt) and not committed:
            self.tally.commits += 1
            command = (
                "git add -A && git reset -q -- .agents .claude 2>/dev/null; "
                "git commit -q --allow-empty -m 'twin: the step asked for a commit'"
            )
            return Move(actions=[Shell(command, "commit the work")]), "commit"
        done = [c.target for c in talk.calls if c.kind == "write" and not c.error]
        text = "Done." + (f" Wrote {', '.join(map(str, done))}." if done else "")
        return Move(text=text), "finish"

    def _check_inputs(self, prompt: str, workdir: str | None) -> None:
        if workdir is None:
            return
        for name, path in input_artifacts(prompt):
            self.tally.inputs_listed += 1
            if not (Path(workdir) / path).exists():
                self.missing_inputs.append(f"{name} ({path})")

    def _writes(self, prompt: str, outputs: list[Output], history: list[Call]) -> list[Action]:
        actions: list[Action] = []
        for out in outputs:
            attempts = [c for c in history if c.kind == "write" and c.target == out.path]
            if any(not c.error for c in attempts) or len(attempts) >= 2:
                continue
            if attempts and not any(c.kind == "read" and c.target == out.path for c in history):
                actions.append(Read(out.path))  # CLIs refuse to overwrite a file not read
                continue
            if "{{" in out.path and not attempts:
                self.tally.unrendered_paths += 1
            actions.append(Write(out.path, self._content(prompt, out, first=not attempts)))
            self.tally.files_written += 1
        return actions

    def _content(self, prompt: str, out: Output, first: bool) -> str:
        kind = (out.type or "").lower()
        if kind == "json" or out.path.endswith(".json"):
            schema = self._schema(prompt, out, count=first)
            example = example_in_prompt(prompt, out.path)
            if example is not None and (schema is None or valid(schema, example)):
                self.tally.examples_used += first
                return json.dumps(example, indent=2) + "\n"
            doc = sample(schema) if schema else {"summary": f"twin output {out.name}"}
            if schema and not valid(schema, doc):
                self.tally.invalid_samples += 1
            return json.dumps(doc, indent=2) + "\n"
        if kind == "markdown" or out.path.endswith(".md"):
            return f"# {out.name}\n\nWritten by the auto twin.\n"
        return f"{out.name}: written by the auto twin\n"

    def _schema(self, prompt: str, out: Output, count: bool) -> dict[str, Any] | None:
        found = schema_in_prompt(prompt, out.path)
        source = "prompt"
        if found is None and self.project_root is not None:
            if self._schemas is None:
                self._schemas = ProjectSchemas(self.project_root)
            found, source = self._schemas.find(out.path, prompt), "project"
        if found is None:
            source = "none"
        if count:
            self.schema_sources.append((out.path, source))
            if source == "prompt":
                self.tally.schemas_from_prompt += 1
            elif source == "project":
                self.tally.schemas_from_project += 1
            else:
                self.tally.schemas_missing += 1
        return found

    def _structured(
        self, prompt: str, schema: dict[str, Any], history: list[Call], turns: int
    ) -> tuple[Move, str]:
        if any(c.kind == "answer" and not c.error for c in history):
            return Move(text="Answer given."), "finish (structured)"
        kind = "judge" if "criteria_results" in (schema.get("properties") or {}) else "review"
        fail, note = self._verdict(kind, prompt)
        return Move(answer=sample(schema, prefer=_verdicts(fail))), note

    def _in_text(self, kind: str, prompt: str, system: str = "") -> tuple[Move, str]:
        """A review or judge asked for its JSON in the answer text (a CLI without
        structured answers): a review as the verdict schema its instructions carry
        (swell's ReviewFeedback), else Wave's shapes, `{verdict, issues, ...}` and
        `{criteria_results, overall_pass, score, summary}`."""
        fail, note = self._verdict(kind, prompt)
        schema = verdict_schema(f"{system}\n{prompt}") if kind == "review" else None
        if schema is not None:
            answer = sample(schema, prefer=_verdicts(fail))
            return Move(text=json.dumps(answer)), note + " (in text, schema)"
        summary = "The twin found a problem to rework." if fail else "Looks right to the twin."
        if kind == "judge":
            listed = prompt.split("criteria:", 1)[-1].split("\n## ", 1)[0]
            criteria = JUDGE_CRITERION.findall(listed) or ["the criterion"]
            results = [{"criterion": c, "pass": not fail, "reasoning": summary} for c in criteria]
            answer: dict[str, Any] = {
                "criteria_results": results,
                "overall_pass": not fail,
                "score": 0.0 if fail else 1.0,
                "summary": summary,
            }
        else:
            issues = [{"severity": "major", "description": summary, "detail": summary}]
            answer = {
                "verdict": "rework" if fail else "pass",
                "issues": issues if fail else [],
                "suggestions": [],
                "confidence": 0.9,
                "summary": summary,
            }
        return Move(text=json.dumps(answer)), note + " (in text)"

    def _verdict(self, kind: str, prompt: str) -> tuple[bool, str]:
        """Whether this review or judge fails (the first of its step, with
        fail_first_review), counted."""
        named = STEP_NAME.search(prompt)
        step = named.group(1) if named else ""
        fail = self.fail_first_review and (kind, step) not in self._failed
        if fail:
            self._failed.add((kind, step))
            self.tally.failed_verdicts += 1
        if kind == "judge":
            self.tally.judges += 1
        else:
            self.tally.reviews += 1
        return fail, f"{kind} {step or '?'}: {'fail' if fail else 'pass'}"


def protocol(path: str) -> Any:
    """The wire module of a request's path (Anthropic's when there is none)."""
    if path.endswith("/responses"):
        return responses
    if path.endswith("/chat/completions"):
        return chat
    if "GenerateContent" in path:
        return gemini
    return anthropic


# --------------------------------------------------------------------------- verdicts


def _verdicts(fail: bool) -> Any:
    """Values a reviewer or judge gives: passing ones, or failing ones with an issue."""

    def prefer(path: tuple[str, ...], schema: dict[str, Any]) -> Any:
        name = path[-1] if path else ""
        enum = schema.get("enum") or []
        if name == "verdict" and enum:
            wanted = ("rework", "fail") if fail else ("pass", "approve", "ok")
            return next((v for v in wanted if v in enum), enum[0])
        if name in ("pass", "passed", "overall_pass") and schema.get("type") == "boolean":
            return not fail
        if name == "score":
            return 0 if fail else 1
        if name == "confidence":
            return 0.9
        if name == "issues" and schema.get("type") == "array":
            if not fail:
                return []
            return NO_PREFERENCE
        if name in ("summary", "detail", "reasoning", "description"):
            return "The twin found a problem to rework." if fail else "Looks right to the twin."
        return NO_PREFERENCE

    return prefer


# --------------------------------------------------------------------------- reading prompts


def _asked_verdict(prompt: str) -> str | None:
    """ "judge" or "review" when the task is swell's (or Wave's) judge or review prompt."""
    if "criteria_results" in prompt or "Evaluate the output of step" in prompt:
        return "judge"
    if "ReviewFeedback" in prompt or re.search(r'"verdict"\s*:', prompt):
        return "review"
    return None


def output_artifacts(prompt: str) -> list[Output]:
    """The files swell's prompt asks the agent to write (its "## Output artifacts")."""
    heading = OUTPUT_HEADING.search(prompt)
    if heading is None:
        return []
    outputs = []
    for line in prompt[heading.end() :].splitlines():
        if line.startswith("#"):
            break
        match = OUTPUT_LINE.match(line)
        if match:
            path, name, _need, kind = match.groups()
            outputs.append(Output(path=path, name=name.strip(), type=kind))
    return outputs


def input_artifacts(prompt: str) -> list[tuple[str, str]]:
    """(name, path) of each file swell's prompt says it gave the agent ("## Input artifacts")."""
    heading = INPUT_HEADING.search(prompt)
    if heading is None:
        return []
    found = []
    for line in prompt[heading.end() :].splitlines():
        if line.startswith("#"):
            break
        match = INPUT_LINE.match(line)
        if match:
            found.append((match.group(1).strip(), match.group(2)))
    return found


def example_in_prompt(prompt: str, path: str) -> Any:
    """The example document a prompt shows for `path` (a ```json block that is no schema,
    its `<placeholder>` values made numbers), as a model would fill it in: the nearest
    after a mention of the file's name, else the only one; None when there is none."""
    name = path.rsplit("/", 1)[-1]
    examples = []
    for match in re.finditer(r"```json[ \t]*\n(.*?)```", prompt, re.S):
        text = re.sub(r'(?<=[:\[,\s])<[^<>"\n]*>', "1", match.group(1))
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict) and value and not _looks_like_schema(value):
            examples.append((match.start(), value))
    for start, value in examples:
        if name in prompt[max(0, start - 600) : start]:
            return value
    return examples[0][1] if len(examples) == 1 else None


def _looks_like_schema(value: Any) -> bool:
    return isinstance(value, dict) and (
        "$schema" in value or ("properties" in value and "type" in value)
    )


def verdict_schema(text: str) -> dict[str, Any] | None:
    """The JSON Schema of a reviewer's answer in `text` (one with a `verdict`)."""
    for _, schema in _schemas(text):
        if "verdict" in (schema.get("properties") or {}):
            return schema
    return None


def _schemas(prompt: str) -> list[tuple[int, dict[str, Any]]]:
    """Every JSON Schema in the text (fenced or not), with where it starts."""
    schemas: list[tuple[int, dict[str, Any]]] = []
    decoder = json.JSONDecoder()
    end = -1
    for match in re.finditer(r"\{", prompt):
        if match.start() < end:
            continue  # inside an object already read
        try:
            value, stop = decoder.raw_decode(prompt, match.start())
        except ValueError:
            continue
        end = stop
        if _looks_like_schema(value):
            schemas.append((match.start(), value))
    return schemas


def schema_in_prompt(prompt: str, path: str) -> dict[str, Any] | None:
    """A JSON Schema the prompt carries for `path` (fenced or not): the schema nearest
    after a mention of the path, else the only schema in the prompt."""
    schemas = _schemas(prompt)
    if not schemas:
        return None
    for start, schema in schemas:
        if path in prompt[max(0, start - 600) : start]:
            return schema
    return schemas[0][1] if len(schemas) == 1 else None


# --------------------------------------------------------------------------- the project's schemas


@dataclass
class _Declared:
    path: str  # the output path (or contract source) the schema checks
    schema: dict[str, Any]
    lines: list[str]  # lines of the step's prompt source, to tell steps apart


class ProjectSchemas:
    """The json_schema contracts of every pipeline of a project, by the file they check:
    what a model that could not see the schema would have to go and read."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.declared: list[_Declared] = []
        for folder in (".agents/pipelines", ".wave/pipelines"):
            for file in sorted((root / folder).glob("*.y*ml")):
                try:
                    data = yaml.safe_load(file.read_text())
                except (yaml.YAMLError, OSError):
                    continue
                if isinstance(data, dict):
                    for step in _all_steps(data.get("steps") or []):
                        self._add(step)

    def _add(self, step: dict[str, Any]) -> None:
        handover = step.get("handover") or {}
        contracts = handover.get("contracts") or (
            [handover["contract"]] if handover.get("contract") else []
        )
        outputs = [a for a in step.get("output_artifacts") or [] if isinstance(a, dict)]
        lines = _source_lines(self.root, step.get("exec") or {})
        for contract in contracts:
            if not isinstance(contract, dict) or contract.get("type") != "json_schema":
                continue
            schema = self._load(contract)
            source = contract.get("source") or (outputs[0].get("path") if outputs else None)
            if schema is None or not source:
                continue
            self.declared.append(_Declared(_norm(str(source)), schema, lines))

    def _load(self, contract: dict[str, Any]) -> dict[str, Any] | None:
        inline = contract.get("schema")
        try:
            if isinstance(inline, dict):
                return inline
            if isinstance(inline, str) and inline.strip():
                return json.loads(inline)
            if contract.get("schema_path"):
                return json.loads((self.root / str(contract["schema_path"])).read_text())
        except (OSError, ValueError):
            return None
        return None

    def find(self, path: str, prompt: str) -> dict[str, Any] | None:
        """The schema of the step this prompt is from that checks `path`: among the
        contracts on that path, the one whose step's prompt lines the prompt holds (an
        output of the same name elsewhere in the project is not this step's)."""
        wanted = _norm(path)
        found = [d for d in self.declared if _matches(d.path, wanted)]
        scored = [(sum(1 for line in d.lines if line in prompt), d) for d in found]
        best = max(scored, key=lambda pair: pair[0], default=None)
        if best is not None and best[0] > 0:
            return best[1].schema
        unknown = [d for d in found if not d.lines]  # a step whose prompt cannot be told
        distinct = {json.dumps(d.schema, sort_keys=True) for d in unknown}
        return unknown[0].schema if len(distinct) == 1 else None


def _all_steps(steps: list[Any]) -> list[dict[str, Any]]:
    out = []
    for step in steps:
        if isinstance(step, dict):
            out.append(step)
            loop = step.get("loop") or {}
            out += _all_steps(loop.get("steps") or [] if isinstance(loop, dict) else [])
    return out


def _source_lines(root: Path, exec_: dict[str, Any]) -> list[str]:
    text = str(exec_.get("source") or "")
    if exec_.get("source_path") and "{{" not in str(exec_["source_path"]):
        with contextlib.suppress(OSError):
            text = (root / str(exec_["source_path"])).read_text()
    return [s for line in text.splitlines() if len(s := line.strip()) >= 25 and "{{" not in s]


def _norm(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _matches(declared: str, path: str) -> bool:
    if "{{" not in declared:
        return declared == path
    pattern = re.escape(declared)
    pattern = re.sub(r"\\\{\\\{.*?\\\}\\\}", ".+", pattern)
    return re.fullmatch(pattern, path) is not None or declared == path
