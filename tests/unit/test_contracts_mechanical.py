"""The mechanical contracts (test_suite, json_schema, non_empty_file) on real files,
real commands and real JSON schemas."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from swell.contracts import json_schema, non_empty_file, test_suite
from swell.contracts.base import ContractContext, ContractResult
from swell.contracts.registry import default_contract_types
from swell.manifest.models import Contract, Step

EVIL = "$(touch PWNED) `touch PWNED`; touch PWNED && echo '\"x"


class Env:
    """A workspace and a project root in tmp_path, and the template variables a visit has."""

    def __init__(self, tmp_path: Path) -> None:
        self.workspace = tmp_path / "workspace"
        self.project = tmp_path / "project"
        self.run_dir = tmp_path / "run"
        for d in (self.workspace, self.project, self.run_dir):
            d.mkdir()
        self.namespace: dict[str, Any] = {
            "input": "the input",
            "workspace": str(self.workspace),
            "project_root": str(self.project),
            "project": {},
            "context": {},
            "artifacts": {},
        }

    def ctx(
        self,
        contract: dict[str, Any],
        *,
        step: dict[str, Any] | None = None,
        artifacts: dict[str, str] | None = None,
        stdout: str | None = None,
        default_timeout: float = 30.0,
    ) -> ContractContext[Any]:
        namespace = self.namespace
        parsed = Contract.model_validate(contract)
        kind = default_contract_types().get(parsed.type)
        return ContractContext(
            settings=kind.Settings.model_validate(parsed.settings),
            index=0,
            step=Step.model_validate(step or {"id": "work"}),
            workspace=self.workspace,
            project_root=self.project,
            run_dir=self.run_dir,
            visit=1,
            namespace=namespace,
            command_env=dict(os.environ),
            artifacts=artifacts or {},
            stdout=stdout,
            diff=lambda: "",
            default_timeout=default_timeout,
        )

    def write(self, relative: str, text: str, base: Path | None = None) -> Path:
        path = (base or self.workspace) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def run(module: Any, ctx: ContractContext[Any]) -> ContractResult:
    result = asyncio.run(module.TYPE.check(ctx))
    assert isinstance(result, ContractResult)
    assert result.passed or result.error, "a failure always says why"
    return result


def test_registry_finds_the_three_modules() -> None:
    types = default_contract_types()
    assert types.get("test_suite") is test_suite.TYPE
    assert types.get("json_schema") is json_schema.TYPE
    assert types.get("non_empty_file") is non_empty_file.TYPE


# ----------------------------------------------------------------------------- test_suite


def test_suite_passes_on_exit_zero(env: Env) -> None:
    result = run(test_suite, env.ctx({"type": "test_suite", "command": "echo all green"}))
    assert result.passed and result.error is None
    assert result.details["exit_code"] == 0
    assert result.details["output_tail"] == "all green"
    assert result.details["dir"] == str(env.workspace)
    assert result.details["duration"] >= 0


def test_suite_failure_names_exit_code_and_output_tail(env: Env) -> None:
    command = "i=1; while [ $i -le 100 ]; do echo line$i; i=$((i+1)); done; echo boom >&2; exit 3"
    result = run(test_suite, env.ctx({"type": "test_suite", "command": command}))
    assert not result.passed and result.error is not None
    first, _, tail = result.error.partition("\n")
    assert first == "exit code 3"
    lines = tail.lstrip("…").split("\n")
    assert len(lines) == test_suite.TAIL_LINES
    assert lines[-2:] == ["line100", "boom"]  # stderr follows stdout
    assert "line41\n" not in result.error and "line42" in result.error
    assert result.details["exit_code"] == 3
    assert result.details["output_tail"] == tail


def test_suite_tail_is_capped_in_characters(env: Env) -> None:
    command = "python3 -c \"print('x' * 10000)\"; exit 1"
    result = run(test_suite, env.ctx({"type": "test_suite", "command": command}))
    assert not result.passed
    assert len(result.details["output_tail"]) == test_suite.TAIL_CHARS + 1  # plus "…"


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie waiting to be reaped


def test_suite_timeout_ends_the_whole_process_group(env: Env) -> None:
    command = "sleep 60 & echo $! > child.pid; echo started; wait"
    started = time.monotonic()
    result = run(
        test_suite, env.ctx({"type": "test_suite", "command": command, "timeout": "300ms"})
    )
    assert time.monotonic() - started < 5
    assert not result.passed and result.error is not None
    assert result.error.startswith("timed out after 0.3s")
    assert "started" in result.error
    assert result.details["timed_out"] is True and result.details["exit_code"] is None
    child = int((env.workspace / "child.pid").read_text())
    deadline = time.monotonic() + 3
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(child), "the background child outlived the timeout"


def test_suite_killed_by_a_signal_says_so(env: Env) -> None:
    result = run(test_suite, env.ctx({"type": "test_suite", "command": "echo dying; kill -9 $$"}))
    assert result.error == "killed by signal 9\ndying"
    assert result.details["exit_code"] == -9


def test_suite_default_timeout_is_the_contexts(env: Env) -> None:
    ctx = env.ctx({"type": "test_suite", "command": "sleep 5"}, default_timeout=0.2)
    result = run(test_suite, ctx)
    assert result.error is not None and result.error.startswith("timed out after 0.2s")


def test_suite_dir_project_root_and_relative(env: Env) -> None:
    result = run(
        test_suite, env.ctx({"type": "test_suite", "command": "pwd", "dir": "project_root"})
    )
    assert result.passed
    assert Path(result.details["output_tail"]).resolve() == env.project.resolve()

    (env.workspace / "pkg").mkdir()
    result = run(test_suite, env.ctx({"type": "test_suite", "command": "pwd", "dir": "pkg"}))
    assert Path(result.details["output_tail"]).resolve() == (env.workspace / "pkg").resolve()


@pytest.mark.parametrize(
    ("dir_", "message"),
    [
        ("../project", "escapes the step's workspace"),
        ("/tmp", "is outside the step's workspace"),
        ("missing", "is not a directory"),
    ],
)
def test_suite_bad_dir_is_a_failure(env: Env, dir_: str, message: str) -> None:
    result = run(test_suite, env.ctx({"type": "test_suite", "command": "true", "dir": dir_}))
    assert not result.passed and result.error is not None
    assert message in result.error


def test_suite_project_values_are_code_other_values_are_data(env: Env) -> None:
    env.namespace["project"]["contract_test_command"] = "echo from-project && echo second"
    env.namespace["context"]["note"] = EVIL
    command = "{{ project.contract_test_command }} && echo {{ context.note }} && echo '{{ input }}'"
    result = run(test_suite, env.ctx({"type": "test_suite", "command": command}))
    assert result.passed, result.error
    assert result.details["output_tail"].split("\n") == [
        "from-project",
        "second",
        EVIL,
        "the input",
    ]
    assert not (env.workspace / "PWNED").exists()


@pytest.mark.parametrize(
    ("contract", "message"),
    [
        ({"type": "test_suite"}, "needs `command`"),
        ({"type": "test_suite", "command": "true", "timeout": "soon"}, "invalid duration"),
        ({"type": "test_suite", "command": "true", "timeout": 0}, "must be positive"),
        ({"type": "test_suite", "command": "echo {{ ( }}"}, "invalid template"),
        ({"type": "test_suite", "command": "{{ project.unset }}"}, "renders to nothing"),
    ],
)
def test_suite_configuration_problems_are_failures(
    env: Env, contract: dict[str, Any], message: str
) -> None:
    result = run(test_suite, env.ctx(contract))
    assert not result.passed and result.error is not None
    assert message in result.error


# ---------------------------------------------------------------------------- json_schema

REVIEW_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["summary", "issues"],
    "properties": {
        "summary": {"type": "string", "minLength": 3},
        "issues": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["severity", "detail"],
                "properties": {
                    "severity": {"enum": ["critical", "major", "minor"]},
                    "detail": {"type": "string"},
                },
            },
        },
    },
}


def _issues(n: int, **overrides: dict[str, Any]) -> list[dict[str, Any]]:
    issues: list[dict[str, Any]] = [{"severity": "minor", "detail": f"d{i}"} for i in range(n)]
    for index, value in overrides.items():
        issues[int(index.lstrip("i"))] = value
    return issues


def test_json_schema_inline_schema_and_source_pass(env: Env) -> None:
    env.write("out/review.json", json.dumps({"summary": "fine", "issues": _issues(2)}))
    ctx = env.ctx({"type": "json_schema", "schema": REVIEW_SCHEMA, "source": "out/review.json"})
    result = run(json_schema, ctx)
    assert result.passed, result.error
    assert result.details["document"] == "out/review.json"
    assert "2020-12" in result.details["draft"]


def test_json_schema_names_every_failing_path_sorted(env: Env) -> None:
    doc = {"issues": _issues(12, i2={"severity": "urgent", "detail": "x"}, i10={"detail": 5})}
    env.write("review.json", json.dumps(doc))
    ctx = env.ctx({"type": "json_schema", "schema": REVIEW_SCHEMA, "source": "review.json"})
    result = run(json_schema, ctx)
    assert not result.passed and result.error is not None
    assert result.details["errors"] == [
        "$: 'summary' is a required property",
        "$.issues[2].severity: 'urgent' is not one of ['critical', 'major', 'minor']",
        "$.issues[10]: 'severity' is a required property",
        "$.issues[10].detail: 5 is not of type 'string'",
    ]
    assert result.error.startswith("review.json does not match inline schema (4 error(s)):")
    assert "- $.issues[2].severity: 'urgent' is not one of" in result.error


def test_json_schema_caps_the_error_list(env: Env) -> None:
    env.write("review.json", json.dumps({"summary": "okay", "issues": [{}] * 15}))
    ctx = env.ctx({"type": "json_schema", "schema": REVIEW_SCHEMA, "source": "review.json"})
    result = run(json_schema, ctx)
    assert result.details["error_count"] == 30
    assert len(result.details["errors"]) == json_schema.MAX_ERRORS
    assert result.error is not None and result.error.endswith("- … and 10 more")


def test_json_schema_from_schema_path_uses_the_declared_draft(env: Env) -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    env.write(".agents/contracts/n.schema.json", json.dumps(schema), env.project)
    env.write("n.json", '{"n": 0}')
    contract = {
        "type": "json_schema",
        "schema_path": ".agents/contracts/n.schema.json",
        "source": "n.json",
    }
    ctx = env.ctx(contract)
    result = run(json_schema, ctx)
    assert not result.passed  # draft-04's boolean exclusiveMinimum is applied
    assert ctx.notes == []  # a known draft is not reported
    assert "draft-04" in result.details["draft"]
    assert result.details["errors"] == ["$.n: 0 is less than or equal to the minimum of 0"]


def test_json_schema_schema_given_as_a_path_string(env: Env) -> None:
    env.write("schemas/review.json", json.dumps(REVIEW_SCHEMA), env.project)
    env.write("review.json", json.dumps({"summary": "fine", "issues": []}))
    ctx = env.ctx({"type": "json_schema", "schema": "schemas/review.json", "source": "review.json"})
    result = run(json_schema, ctx)
    assert result.passed, result.error
    assert result.details["schema"] == "schemas/review.json"


def test_json_schema_schema_given_as_inline_json_text(env: Env) -> None:
    env.write("n.json", '{"n": "one"}')
    ctx = env.ctx(
        {
            "type": "json_schema",
            "schema": '{"properties": {"n": {"type": "integer"}}}',
            "source": "n.json",
        }
    )
    result = run(json_schema, ctx)
    assert result.details["errors"] == ["$.n: 'one' is not of type 'integer'"]


def test_json_schema_checks_formats(env: Env) -> None:
    env.write("d.json", '{"due": "2024-13-45"}')
    schema = {"properties": {"due": {"type": "string", "format": "date"}}}
    result = run(
        json_schema, env.ctx({"type": "json_schema", "schema": schema, "source": "d.json"})
    )
    assert result.details["errors"] == ["$.due: '2024-13-45' is not a 'date'"]


def test_json_schema_follows_relative_refs_next_to_the_schema(env: Env) -> None:
    env.write(
        "schemas/common.json", json.dumps({"$defs": {"id": {"type": "integer"}}}), env.project
    )
    main = {"properties": {"id": {"$ref": "common.json#/$defs/id"}}}
    env.write("schemas/main.json", json.dumps(main), env.project)
    env.write("doc.json", '{"id": "seven"}')
    contract = {"type": "json_schema", "schema_path": "schemas/main.json", "source": "doc.json"}
    result = run(json_schema, env.ctx(contract))
    assert result.details["errors"] == ["$.id: 'seven' is not of type 'integer'"]


def test_json_schema_invalid_json_document_names_the_position(env: Env) -> None:
    env.write("review.json", '{\n  "summary": "x",\n  "issues": [1 2]\n}')
    ctx = env.ctx({"type": "json_schema", "schema": REVIEW_SCHEMA, "source": "review.json"})
    result = run(json_schema, ctx)
    assert result.error == (
        "review.json is not valid JSON: Expecting ',' delimiter at line 3 column 16 (char 35)"
    )


@pytest.mark.parametrize(
    ("contract", "files", "message"),
    [
        (
            {"schema_path": "schemas/missing.json"},
            {},
            "schema file schemas/missing.json not found",
        ),
        (
            {"schema_path": "bad.json"},
            {"bad.json": '{"type": '},
            "schema file bad.json is not valid JSON: Expecting value at line 1 column 10",
        ),
        (
            {"schema_path": "list.json"},
            {"list.json": "[1]"},
            "schema file list.json must hold a JSON object",
        ),
        (
            {"schema": {"type": "nope"}},
            {},
            "inline schema is not a valid JSON Schema: 'nope' is not valid under any",
        ),
        ({"schema": "{not json"}, {}, "inline schema is not valid JSON"),
        ({"schema": 3}, {}, "`schema` must be a mapping, JSON text or a path, not int"),
        ({"schema": {}, "schema_path": "x.json"}, {}, "not both"),
        ({}, {}, "needs `schema_path` or `schema`"),
        ({"schema_path": "../outside.json"}, {}, "must be a path inside the project"),
        ({"schema_path": "/etc/passwd"}, {}, "must be a path inside the project"),
    ],
)
def test_json_schema_schema_problems_are_failures(
    env: Env, contract: dict[str, Any], files: dict[str, str], message: str
) -> None:
    for name, text in files.items():
        env.write(name, text, env.project)
    env.write("doc.json", "{}")
    result = run(json_schema, env.ctx({"type": "json_schema", "source": "doc.json", **contract}))
    assert not result.passed and result.error is not None
    assert message in result.error


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("missing.json", "missing.json does not exist"),
        ("../escape.json", "escapes the step's workspace"),
        ("empty.json", "empty.json is empty"),
    ],
)
def test_json_schema_document_problems_are_failures(env: Env, source: str, message: str) -> None:
    env.write("empty.json", "  \n")
    result = run(json_schema, env.ctx({"type": "json_schema", "schema": {}, "source": source}))
    assert result.error is not None and message in result.error


def test_json_schema_source_is_a_template(env: Env) -> None:
    path = env.write("out/r.json", "[]")
    env.namespace["artifacts"]["report"] = str(path)
    ctx = env.ctx(
        {"type": "json_schema", "schema": {"type": "object"}, "source": "{{ artifacts.report }}"}
    )
    result = run(json_schema, ctx)
    assert result.details["errors"] == ["$: [] is not of type 'object'"]


def test_json_schema_without_source_uses_the_steps_json_artifact(env: Env) -> None:
    step = {
        "id": "analyze",
        "output_artifacts": [
            {"name": "notes", "path": "notes.md"},
            {"name": "plan", "path": "plan.txt"},
            {"name": "findings", "path": "out/findings.json"},
        ],
    }
    env.write("notes.md", "# not json")
    env.write("plan.txt", '{"from": "plan"}')  # JSON content, not a .json name
    env.write("out/findings.json", '{"from": "findings"}')
    upstream = env.write("upstream.json", '{"from": "upstream"}')
    schema = {"properties": {"from": {"const": "nothing"}}}
    ctx = env.ctx(
        {"type": "json_schema", "schema": schema},
        step=step,
        artifacts={"upstream": str(upstream)},
        stdout='{"from": "stdout"}',
    )
    result = run(json_schema, ctx)
    assert result.details["document"] == "artifact 'plan' (plan.txt)"
    assert result.details["errors"] == ["$.from: 'nothing' was expected"]


def test_json_schema_declared_json_artifact_must_exist(env: Env) -> None:
    step = {"id": "a", "output_artifacts": [{"name": "f", "path": "f.json"}]}
    ctx = env.ctx({"type": "json_schema", "schema": {}}, step=step, stdout="{}")
    result = run(json_schema, ctx)
    assert result.error == "artifact 'f' (f.json) does not exist (the step did not write it)"


def test_json_schema_without_artifacts_uses_json_stdout(env: Env) -> None:
    schema = {"required": ["verdict"]}
    fenced = '```json\n{"verdict": "pass"}\n```\n'
    result = run(json_schema, env.ctx({"type": "json_schema", "schema": schema}, stdout=fenced))
    assert result.passed, result.error
    assert result.details["document"] == "the step's output"

    result = run(json_schema, env.ctx({"type": "json_schema", "schema": schema}, stdout="{}"))
    assert result.details["errors"] == ["$: 'verdict' is a required property"]

    result = run(json_schema, env.ctx({"type": "json_schema", "schema": schema}, stdout="done!"))
    assert result.error is not None and result.error.startswith("no JSON document to validate")


def test_json_schema_unknown_draft_is_validated_as_2020_12_with_a_note(env: Env) -> None:
    env.write("d.json", "1")
    schema = {"$schema": "https://example.com/my-draft", "type": "integer"}
    ctx = env.ctx({"type": "json_schema", "schema": schema, "source": "d.json"})
    result = run(json_schema, ctx)
    assert result.passed
    assert ctx.notes == [
        "inline schema: unknown $schema 'https://example.com/my-draft'; validating as draft 2020-12"
    ]


# ------------------------------------------------------------------------- non_empty_file


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "report.md does not exist"),
        ("", "report.md is empty"),
        (" \n\t\r\n\u00a0\ufeff  \n", "report.md contains only whitespace"),
        ('{"error": "rate limited"}', 'report.md holds only an error, not content: {"error"'),
        (
            '{"errors": ["boom"], "status": 500, "data": null}',
            "holds only an error, not content",
        ),
        ('{"type": "error", "error": {"type": "overloaded", "message": "x"}}', "only an error"),
    ],
)
def test_non_empty_file_failures(env: Env, content: str | None, message: str) -> None:
    if content is not None:
        env.write("report.md", content)
    result = run(non_empty_file, env.ctx({"type": "non_empty_file", "source": "report.md"}))
    assert not result.passed and result.error is not None
    assert message in result.error


@pytest.mark.parametrize(
    "content",
    [
        "# Findings\n",
        '{"error": null, "result": "fine"}',
        '{"error": "partial", "findings": [1, 2]}',
        '{"errors": [], "status": "ok"}',
        "{not json at all",
        "[]",
        "\n" * 70000 + "x",  # content after the first read chunk
    ],
)
def test_non_empty_file_passes(env: Env, content: str) -> None:
    env.write("report.md", content)
    result = run(non_empty_file, env.ctx({"type": "non_empty_file", "source": "report.md"}))
    assert result.passed, result.error
    assert result.details["size"] == len(content.encode())


def test_non_empty_file_directory_escape_and_missing_source(env: Env) -> None:
    (env.workspace / "out").mkdir()
    cases = {
        "out": "out is a directory",
        "../project/x": "escapes the step's workspace",
        str(env.project): "is outside the step's workspace",
    }
    for source, message in cases.items():
        result = run(non_empty_file, env.ctx({"type": "non_empty_file", "source": source}))
        assert result.error is not None and message in result.error, source
    result = run(non_empty_file, env.ctx({"type": "non_empty_file"}))
    assert result.error is not None and "needs `source`" in result.error


def test_non_empty_file_symlink_out_of_the_workspace_is_refused(env: Env) -> None:
    secret = env.write("secret.txt", "s", env.project)
    (env.workspace / "link.txt").symlink_to(secret)
    result = run(non_empty_file, env.ctx({"type": "non_empty_file", "source": "link.txt"}))
    assert result.error is not None and "escapes the step's workspace" in result.error


def test_non_empty_file_source_is_a_template(env: Env) -> None:
    path = env.write("out/report.md", "done")
    env.namespace["artifacts"]["report"] = str(path)
    ctx = env.ctx({"type": "non_empty_file", "source": "{{ artifacts.report }}"})
    assert run(non_empty_file, ctx).passed
