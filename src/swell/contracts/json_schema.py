"""`type: json_schema`: a JSON document validated against a JSON Schema.

The schema: `schema_path` (a file relative to the project root), or `schema`, which
is an inline mapping, inline JSON text (Wave writes `schema: '{"type": ...}'`) or,
as any other string, a path like `schema_path`. Validation uses the draft the schema
declares in `$schema` (2020-12 when it declares none or one jsonschema does not
know, with a warning), checks `format` where jsonschema can, and resolves relative
`$ref`s to files next to the schema, inside the project.

The document: the file at `source` (a template, in the step's workspace), else the
first of the step's own `output_artifacts` that is JSON (`type: json`, a `.json` path,
or content that parses), else `.agents/artifact.json` of the workspace when it is
there (Wave's default), else the visit's stdout when it is JSON (a whole-answer
```json fence is accepted). Unless `allow_recovery: false`, JSON is recovered from what
models really write (json_recovery.py: fences, prose around it, comments, trailing
commas, single quotes, bare keys; `recovery_level` picks how far to go), and what was
recovered is said in a warning and in the result's details. Only the step's declared
artifacts are candidates:
`ctx.artifacts` also holds upstream steps' artifacts, which are not this step's output.

Every error names the JSON path that failed (`$.issues[2].severity: 'urgent' is not
one of [...]`); all of them, sorted by path, at most MAX_ERRORS.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from pydantic import Field
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012, specification_with

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.contracts.json_recovery import Level, NotJson, WrappedNotJson, recover
from swell.contracts.non_empty_file import FileProblem, read_file, shown, workspace_path
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.workspace.offload import off_loop
from swell.workspace.paths import PathEscape

MAX_ERRORS = 20
MAX_MESSAGE = 300
# Wave's document when a contract names no `source` and the step no output artifact
FALLBACK_SOURCE = ".agents/artifact.json"
MAX_SNIFF = 10 * 1024 * 1024  # a non-.json artifact larger than this is not parsed to sniff


class Unusable(Exception):
    """A user-caused reason the check cannot pass (missing file, bad schema, no document)."""


class JsonSchemaSettings(ContractSettings):
    schema_: Any = Field(default=None, alias="schema")
    schema_path: str | None = None
    source: str | None = None
    # JSON recovery from real LLM output (json_recovery.py); on unless turned off
    allow_recovery: bool | None = None
    recovery_level: Level | None = None  # default progressive, as Wave's
    disable_wrapper_detection: bool | None = None
    progressive_validation: bool | None = None

    # Wave still fails the contract with it set; it only adds to the message
    IGNORED = ("progressive_validation",)


def _loads(ctx: ContractContext[JsonSchemaSettings], text: str, label: str) -> Any:
    """The JSON in `text`, recovered from fences, prose, comments and the like unless
    `allow_recovery: false`; what recovery did is recorded for the contract's event."""
    settings = ctx.settings
    if settings.allow_recovery is False:
        return _parse(text, label)
    try:
        value, steps = recover(
            text,
            settings.recovery_level or "progressive",
            unwrap=not settings.disable_wrapper_detection,
        )
    except WrappedNotJson as exc:
        raise Unusable(f"{label} is {exc}") from None
    except NotJson:
        return _parse(text, label)  # the strict parser's message says where it broke
    if steps:
        ctx.notes.append(f"recovered the JSON of {label}: {', '.join(steps)}")
        recovered = ctx.details.setdefault("recovered", [])
        recovered += steps
    return value


# ---------------------------------------------------------------------------- the schema


def _parse(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unusable(
            f"{what} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} "
            f"(char {exc.pos})"
        ) from None


def _project_file(ctx: ContractContext[JsonSchemaSettings], raw: str, what: str) -> Path:
    text = ctx.render(raw).strip()
    root = ctx.project_root.resolve()
    target = (root / text).resolve()
    if not text or Path(text).is_absolute() or (target != root and root not in target.parents):
        raise Unusable(f"{what} {text!r} must be a path inside the project (relative to {root})")
    return target


def _schema_file(path: Path, label: str) -> Any:
    """The schema at `path` (resolved: a link in the project is followed inside it)."""
    if not path.exists():
        raise Unusable(f"schema file {label} not found (paths are relative to the project root)")
    try:
        text = read_file(path, f"schema file {label}").decode("utf-8-sig")
    except FileProblem as exc:
        raise Unusable(str(exc)) from None
    except UnicodeDecodeError:
        raise Unusable(f"schema file {label} is not UTF-8 text") from None
    return _parse(text, f"schema file {label}")


def load_schema(ctx: ContractContext[JsonSchemaSettings]) -> tuple[Any, str, Path]:
    """The schema, where it came from (for messages), and the directory `$ref`s start in."""
    inline, path = ctx.settings.schema_, ctx.settings.schema_path
    if inline is not None and path:
        raise Unusable("set either `schema` or `schema_path`, not both")
    if isinstance(inline, str) and inline.strip().startswith("{"):
        return _parse(inline, "inline schema"), "inline schema", ctx.project_root
    if isinstance(inline, str):
        path = inline
    elif inline is not None:
        if not isinstance(inline, dict | bool):
            raise Unusable(
                f"`schema` must be a mapping, JSON text or a path, not {type(inline).__name__}"
            )
        return inline, "inline schema", ctx.project_root
    if not path:
        raise Unusable("json_schema contract needs `schema_path` or `schema`")
    target = _project_file(ctx, path, "schema_path")
    schema = _schema_file(target, path)
    if not isinstance(schema, dict | bool):
        raise Unusable(f"schema file {path} must hold a JSON object")
    return schema, path, target.parent


def _no_such(uri: str) -> NoSuchResource:
    # referencing's attrs classes take keywords; mypy does not see their fields
    return NoSuchResource(ref=uri)  # type: ignore[call-arg]


def dialect(cls: type[Validator]) -> str:
    """The metaschema URI of a validator class (drafts 3 and 4 call it `id`)."""
    meta = cls.META_SCHEMA
    return str(meta.get("$id") or meta.get("id") or "")


def _registry(base: Path, root: Path, cls: type[Validator]) -> Registry[Any]:
    """Resolves relative `$ref`s to JSON files under `base`, never outside `root`."""
    spec = specification_with(dialect(cls), default=DRAFT202012)
    root = root.resolve()

    def retrieve(uri: str) -> Resource[Any]:
        parts = urlsplit(uri)
        target = (base / parts.path).resolve()
        if parts.scheme or parts.netloc or (target != root and root not in target.parents):
            raise _no_such(uri)
        try:
            contents = json.loads(read_file(target, uri).decode("utf-8-sig"))
        except ValueError:  # FileProblem and UnicodeDecodeError too
            raise _no_such(uri) from None
        return Resource.from_contents(contents, default_specification=spec)

    return Registry(retrieve=retrieve)  # type: ignore[call-arg]


def validator(
    ctx: ContractContext[JsonSchemaSettings], schema: Any, origin: str, base: Path
) -> Validator:
    """A validator for the schema's declared draft; Unusable if the schema is invalid."""
    cls: type[Validator] = validator_for(schema, default=Draft202012Validator)
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    if isinstance(declared, str) and declared.rstrip("#") != dialect(cls).rstrip("#"):
        ctx.notes.append(f"{origin}: unknown $schema {declared!r}; validating as draft 2020-12")
    try:
        cls.check_schema(schema)
    except SchemaError as exc:
        where = exc.json_path if exc.absolute_path else "the top level"
        raise Unusable(
            f"{origin} is not a valid JSON Schema: {_short(exc.message)} at {where}"
        ) from None
    return cls(
        schema, registry=_registry(base, ctx.project_root, cls), format_checker=cls.FORMAT_CHECKER
    )


# -------------------------------------------------------------------------- the document


def _unfence(text: str) -> str:
    """The body of a ```json fence that makes up the whole text, else the text."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and "\n" in stripped:
        return stripped[stripped.index("\n") + 1 : -3]
    return stripped


def _read(path: Path, label: str) -> str:
    try:
        return read_file(path, label).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise Unusable(f"{label} is not UTF-8 text") from None
    except FileProblem as exc:
        raise Unusable(str(exc)) from None


def _document_text(ctx: ContractContext[JsonSchemaSettings], text: str, label: str) -> Any:
    if not text.strip():
        raise Unusable(f"{label} is empty")
    return _loads(ctx, text, label)


def load_document(ctx: ContractContext[JsonSchemaSettings]) -> tuple[Any, str]:
    """The JSON document to validate and a label for it."""
    if ctx.settings.source:
        try:
            path = workspace_path(ctx, ctx.settings.source)
        except PathEscape as exc:
            raise Unusable(str(exc)) from None
        label = shown(path, ctx)
        return _document_text(ctx, _read(path, label), label), label
    for art in ctx.step.output_artifacts:
        raw = ctx.artifacts.get(art.name) or art.path
        if not raw:
            continue
        try:
            path = workspace_path(ctx, raw, f"artifact '{art.name}'")
        except PathEscape as exc:
            raise Unusable(str(exc)) from None
        label = f"artifact '{art.name}' ({shown(path, ctx)})"
        if (art.type or "").lower() == "json" or path.suffix.lower() == ".json":
            return _document_text(ctx, _read(path, label), label), label
        try:
            return json.loads(read_file(path, label, MAX_SNIFF).decode("utf-8-sig")), label
        except ValueError:  # FileProblem too: a file swell will not read is not the document
            continue  # not JSON: not the document
    fallback = ctx.workspace / FALLBACK_SOURCE
    if fallback.is_file() and not fallback.is_symlink():  # Wave's document without `source`
        label = FALLBACK_SOURCE
        return _document_text(ctx, _read(fallback, label), label), label
    if ctx.stdout and ctx.stdout.strip():
        try:
            return _loads(ctx, _unfence(ctx.stdout), "the step's output"), "the step's output"
        except Unusable:
            pass
    raise Unusable(
        "no JSON document to validate: set `source`, or have the step write a .json "
        "output artifact or answer with JSON"
    )


# ---------------------------------------------------------------------------- the check


def _short(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def _path_key(error: ValidationError) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, p) if isinstance(p, int) else (1, str(p)) for p in error.absolute_path)


def describe(errors: Iterable[ValidationError]) -> list[str]:
    """`$.path: message` for each error, sorted by path (array indexes numerically)."""
    ordered = sorted(errors, key=lambda e: (_path_key(e), e.message))
    return [f"{e.json_path}: {_short(e.message)}" for e in ordered]


class JsonSchema(ContractType[JsonSchemaSettings]):
    name = "json_schema"
    Settings = JsonSchemaSettings

    def problems(self, settings: JsonSchemaSettings, scope: LintScope) -> list[Problem]:
        if settings.schema_ is None and not settings.schema_path:
            return [scope.problem((), "a json_schema contract needs `schema or schema_path`")]
        path = settings.schema_path
        if path and "{{" not in path and not (scope.project.root / path).is_file():
            return [scope.problem(("schema_path",), f"schema_path {path} does not exist")]
        return []

    async def check(self, ctx: ContractContext[JsonSchemaSettings]) -> ContractResult:
        return await off_loop(lambda: _check(ctx))  # files, and a schema over a large document

    def brief(self, ctx: ContractContext[JsonSchemaSettings]) -> str:
        try:
            schema, _, _ = load_schema(ctx)
        except Unusable:
            return ""  # the check after the visit says what is wrong with it
        target = ctx.settings.source or next(
            (a.path for a in ctx.step.output_artifacts if a.path and _is_json(a.type, a.path)), None
        )
        what = f"`{ctx.render(target)}`" if target else "Your JSON output"
        text = json.dumps(schema, indent=2)
        if len(text) > MAX_BRIEF:
            text = text[:MAX_BRIEF] + "\n… (cut; the whole schema is checked)"
        lines = [
            f"{what} must be valid JSON conforming to this schema; the step fails its "
            "check otherwise:",
            f"```json\n{text}\n```",
        ]
        required = schema.get("required") if isinstance(schema, dict) else None
        if isinstance(required, list) and required:
            props = schema.get("properties") or {}
            names = ", ".join(f"`{r}`" for r in required)
            skeleton = {r: placeholder(props.get(r)) for r in required if isinstance(r, str)}
            lines += [
                f"Required fields: {names}",
                "Its shape (fill in real data):",
                f"```json\n{json.dumps(skeleton, indent=2)}\n```",
            ]
        return "\n".join(lines)


MAX_BRIEF = 50_000  # characters of a schema put into the step's prompt


def _is_json(kind: str | None, path: str) -> bool:
    return (kind or "").lower() == "json" or path.lower().endswith(".json")


def placeholder(prop: Any) -> Any:
    """A value of the shape a schema property asks for, for a skeleton."""
    if not isinstance(prop, dict):
        return "..."
    if isinstance(prop.get("enum"), list) and prop["enum"]:
        return prop["enum"][0]
    if "const" in prop:
        return prop["const"]
    kind = prop.get("type")
    kind = kind[0] if isinstance(kind, list) and kind else kind
    return {"integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}.get(
        kind if isinstance(kind, str) else "", "..."
    )


def _check(ctx: ContractContext[JsonSchemaSettings]) -> ContractResult:
    try:
        schema, origin, base = load_schema(ctx)
        checker = validator(ctx, schema, origin, base)
        document, label = load_document(ctx)
        try:
            errors = describe(checker.iter_errors(document))
        except Unresolvable as exc:
            raise Unusable(f"{origin}: cannot resolve $ref {exc}") from None
    except Unusable as exc:
        return ContractResult(passed=False, error=str(exc))
    details: dict[str, Any] = {
        **ctx.details,
        "schema": origin,
        "document": label,
        "draft": dialect(type(checker)),
        "error_count": len(errors),
    }
    if not errors:
        return ContractResult(passed=True, details=details)
    shown_errors = errors[:MAX_ERRORS]
    more = len(errors) - len(shown_errors)
    details["errors"] = shown_errors
    lines = [f"{label} does not match {origin} ({len(errors)} error(s)):"]
    lines += [f"- {e}" for e in shown_errors]
    if more:
        lines.append(f"- … and {more} more")
    return ContractResult(passed=False, error="\n".join(lines), details=details)


TYPE = JsonSchema()
