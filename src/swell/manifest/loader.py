"""Find the project, load wave.yaml and pipelines, and report every problem at file:line:col."""

from __future__ import annotations

import difflib
import functools
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from swell.errors import ManifestError, PipelineNotFound, Problem, ProjectNotFound
from swell.manifest import cache
from swell.manifest.discovery import MANIFEST_NAMES, find_project_root
from swell.manifest.models import Manifest, Pipeline, name_problem
from swell.manifest.partial import validate_partially
from swell.manifest.yamldoc import Loc, SourceMap, YamlDoc
from swell.manifest.yamlsrc import parse_yaml, read_text

PIPELINE_DIRS = (".agents/pipelines", ".wave/pipelines")

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")


@dataclass
class Project:
    root: Path
    manifest_path: Path
    manifest: Manifest
    source: SourceMap
    warnings: list[Problem] = field(default_factory=list)  # found while loading


@dataclass
class LoadedPipeline:
    name: str
    path: Path
    pipeline: Pipeline
    source: SourceMap
    text: str = ""  # the file as it was loaded (a run keeps it, and resumes from it)
    warnings: list[Problem] = field(default_factory=list)  # found while loading


def display_path(path: Path) -> str:
    """A path as a user would type it: relative to the cwd when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # pragma: no cover - other drive on Windows
        return str(path)
    return rel if not rel.startswith("..") else str(path)


def _readable(err: dict[str, Any], model: type[BaseModel], loc: Loc) -> tuple[str, bool]:
    """A human sentence for one pydantic error; True when it is about a key."""
    kind = err["type"]
    field = str(loc[-1]) if loc else ""
    if field == "[key]" and len(loc) >= 3:  # pydantic's loc for a mapping's key
        field = f"{loc[-3]}"
    if kind == "extra_forbidden":
        parent = _model_at(model, loc[:-1])
        known = sorted(parent.model_fields) if parent else []
        hint = difflib.get_close_matches(field, known, n=1)
        suffix = f" (did you mean '{hint[0]}'?)" if hint else ""
        return f"unknown field '{field}'{suffix}", True
    if kind == "missing":
        return f"missing required field '{field}'", False
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        return f"'{field}' must be one of {expected}, not {err.get('input')!r}", False
    msg = err["msg"]
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return f"'{field}': {msg}" if field else msg, False


def _model_at(model: type[BaseModel], loc: Loc) -> type[BaseModel] | None:
    """The model class reached by following `loc` through field annotations."""
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                # a dict key (adapters.NAME) - stay on the dict's value type
                continue
            current = info.annotation
        while True:
            origin = typing.get_origin(current)
            args = [a for a in typing.get_args(current) if a is not type(None)]
            if origin is None:
                break
            if origin is dict:
                current = args[-1]
            elif args:
                current = next(
                    (a for a in args if isinstance(a, type) and issubclass(a, BaseModel)), args[0]
                )
            else:
                break
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def validation_problems(
    exc: ValidationError, model: type[BaseModel], source: SourceMap, at: Loc = ()
) -> list[Problem]:
    """One readable problem per pydantic error of `model`, validated from the data at
    `at` in the file; a value that fits no member of a union is one problem, not one
    per member."""
    problems: list[Problem] = []
    unions: dict[Loc, list[str]] = {}
    for err in exc.errors():
        raw: Loc = tuple(err["loc"])
        cut = next((i for i, p in enumerate(raw) if isinstance(p, str) and p in _UNION_TAGS), -1)
        if cut >= 0:
            unions.setdefault(raw[:cut], []).append(_UNION_TAGS[str(raw[cut])])
            continue
        message, on_key = _readable(dict(err), model, raw)
        problems.append(source.problem((*at, *raw), message, key=on_key))
    for loc, kinds in unions.items():
        kinds = list(dict.fromkeys(kinds))
        either = " or ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
        field = str(loc[-1]) if loc else "value"
        problems.append(source.problem((*at, *loc), f"'{field}' must be {either}"))
    return problems


@dataclass
class Checked(Generic[T]):
    """A file's model with its invalid values left out (None when nothing is left),
    every problem found (errors and warnings), and the source map of that model."""

    obj: T | None
    problems: list[Problem]
    source: SourceMap

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]


def check_model(model: type[M], data: Any, source: SourceMap) -> Checked[M]:
    """Every field-level problem of `data` as `model`, and the model of what is valid."""
    if not isinstance(data, dict):
        return Checked(
            None, [source.problem((), "expected a mapping at the top of the file")], source
        )
    obj, problems, pruned = validate_partially(
        model, data, lambda exc: validation_problems(exc, model, source), set(_UNION_TAGS), source
    )
    # Wave fields swell does not run are found in the raw data, so they are reported
    # together with every other problem of the file
    problems.extend(unsupported_problems(model, data, (), source))
    return Checked(obj, sorted(_dedupe(problems), key=lambda p: (p.line, p.col)), pruned)


def _validate(model: type[M], data: Any, source: SourceMap) -> tuple[M, list[Problem]]:
    """The model of `data`, and its warnings; ManifestError with every problem if any
    is an error."""
    checked = check_model(model, data, source)
    if checked.errors or checked.obj is None:
        raise ManifestError(checked.problems)
    return checked.obj, checked.problems


# pydantic adds these to `loc` for union members; they are not keys in the file
_UNION_TAGS = {
    "str": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "a boolean",
    "list[str]": "a list of strings",
    "dict[str,any]": "a mapping",
}


def _dedupe(problems: list[Problem]) -> list[Problem]:
    seen: set[tuple[int, int, str]] = set()
    out = []
    for p in problems:
        if (p.line, p.col, p.message) not in seen:
            seen.add((p.line, p.col, p.message))
            out.append(p)
    return out


@functools.cache
def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """A model's fields by alias and by name (once per model, not once per value)."""
    fields = {info.alias or name: info for name, info in model.model_fields.items()}
    fields.update(model.model_fields)
    return fields


def unsupported_problems(annotation: Any, data: Any, loc: Loc, source: SourceMap) -> list[Problem]:
    """Problems for Wave fields that are set in `data` but not implemented (an error)
    or not run yet (a warning naming the field). Any model may list them (`Strict`'s
    UNSUPPORTED and NOT_RUN; a contract type's settings their NOT_RUN)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if not isinstance(data, dict):
            return []
        fields = _fields(annotation)
        problems: list[Problem] = []
        unsupported: dict[str, str] = getattr(annotation, "UNSUPPORTED", {})
        not_runs: dict[str, str] = getattr(annotation, "NOT_RUN", {})
        for key, value in data.items():
            what = unsupported.get(key)
            not_run = not_runs.get(key)
            if what and value not in (None, [], {}, False):
                problems.append(
                    source.problem((*loc, key), f"`{key}` ({what}) is not supported yet", key=True)
                )
            elif not_run and value not in (None, [], {}, False):
                message = f"swell does not run `{key}` ({not_run}) yet; it is ignored"
                problems.append(source.problem((*loc, key), message, key=True, severity="warning"))
            if not what and key in fields:
                problems.extend(
                    unsupported_problems(fields[key].annotation, value, (*loc, key), source)
                )
        return problems
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin is list and args and isinstance(data, list):
        return [
            p
            for i, item in enumerate(data)
            for p in unsupported_problems(args[0], item, (*loc, i), source)
        ]
    if origin is dict and args and isinstance(data, dict):
        return [
            p
            for key, item in data.items()
            for p in unsupported_problems(args[-1], item, (*loc, key), source)
        ]
    # a union (`Contract | None`): look through each member
    return _dedupe([p for arg in args for p in unsupported_problems(arg, data, loc, source)])


def load_project(root: Path | None = None) -> Project:
    """Load the manifest of the project at or above `root` (default: the cwd)."""
    project_root = find_project_root(root)
    path = next((p for n in MANIFEST_NAMES if (p := project_root / n).is_file()), None)
    if path is None:  # pragma: no cover - find_project_root found one
        raise ProjectNotFound(f"no manifest in {project_root}")
    shown = display_path(path)
    text = read_text(path, shown)

    def build() -> Project:
        return _project(project_root, path, parse_yaml(text, shown))

    return cache.kept(cache.key("manifest", path, shown, text), build, Project)


def _project(root: Path, path: Path, doc: YamlDoc) -> Project:
    manifest, warnings = _validate(Manifest, doc.data, doc.source)
    return Project(root, path, manifest, doc.source, warnings)


class _Found(typing.NamedTuple):
    """What checking a file found: its loaded form (None: nothing valid) and problems."""

    loaded: Any
    problems: list[Problem]


def _checked_file(kind: str, path: Path, check: typing.Callable[[str, str], _Found]) -> _Found:
    """`check(text, shown)` of the file at `path`, kept in the manifest cache: `swell
    validate` of files that checked before neither parses YAML nor builds validators."""
    shown = display_path(path)
    try:
        text = read_text(path, shown)
    except ManifestError as exc:
        return _Found(None, exc.problems)
    key = cache.key(f"checked {kind}", path, shown, text)
    return cache.kept(key, lambda: check(text, shown), _Found)


def check_project(root: Path | None = None) -> tuple[Project | None, list[Problem]]:
    """The project with its manifest's invalid values left out, and every problem of
    the manifest (None when it cannot be read or nothing valid is left)."""
    project_root = find_project_root(root)
    path = next(p for n in MANIFEST_NAMES if (p := project_root / n).is_file())

    def check(text: str, shown: str) -> _Found:
        try:
            doc = parse_yaml(text, shown)
        except ManifestError as exc:
            return _Found(None, exc.problems)
        checked = check_model(Manifest, doc.data, doc.source)
        if checked.obj is None:
            return _Found(None, checked.problems)
        return _Found(Project(project_root, path, checked.obj, checked.source), checked.problems)

    found = _checked_file("manifest", path, check)
    return found.loaded, found.problems


def pipeline_paths(root: Path) -> dict[str, Path]:
    """Every pipeline file of the project by name; .agents wins over .wave."""
    found: dict[str, Path] = {}
    for directory in PIPELINE_DIRS:
        base = root / directory
        if not base.is_dir():
            continue
        for path in sorted(base.iterdir()):
            if path.suffix in (".yaml", ".yml") and path.stem not in found:
                found[path.stem] = path
    return found


def _is_file(path: Path) -> bool:
    """`path.is_file()`, and False for a name the OS refuses (too long, ...)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def resolve_pipeline(root: Path, name_or_path: str) -> Path:
    """The file for a pipeline name, or the path itself when one is given."""
    candidate = Path(name_or_path)
    if candidate.suffix in (".yaml", ".yml") or os.sep in name_or_path:
        full = candidate if candidate.is_absolute() else Path.cwd() / candidate
        try:
            if full.is_file():
                return full.resolve()
            is_dir, exists = full.is_dir(), full.exists()
        except (OSError, ValueError) as exc:  # a name too long, a NUL
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise PipelineNotFound(f"pipeline file {name_or_path}: {reason}") from None
        if is_dir:
            raise PipelineNotFound(f"pipeline file {name_or_path} is a directory")
        if exists:
            raise PipelineNotFound(f"pipeline file {name_or_path} is not a regular file")
        raise PipelineNotFound(f"pipeline file {name_or_path} does not exist")
    for directory in PIPELINE_DIRS:
        for suffix in (".yaml", ".yml"):
            path = root / directory / f"{name_or_path}{suffix}"
            if _is_file(path):
                return path
    known = sorted(pipeline_paths(root))
    hint = difflib.get_close_matches(name_or_path, known, n=1)
    where = " or ".join(f"{d}/" for d in PIPELINE_DIRS)
    extra = (
        f"; did you mean '{hint[0]}'?"
        if hint
        else (f"; known: {', '.join(known)}" if known else "")
    )
    raise PipelineNotFound(f"no pipeline named '{name_or_path}' in {where}{extra}")


def load_pipeline(root: Path, name_or_path: str) -> LoadedPipeline:
    """Load and validate (field level) one pipeline."""
    path = resolve_pipeline(root, name_or_path)
    shown = display_path(path)
    text = read_text(path, shown)
    name = cache.key("pipeline", path, shown, text)
    return cache.kept(name, lambda: _pipeline(path, parse_yaml(text, shown)), LoadedPipeline)


def load_stored_pipeline(path: Path, text: str) -> LoadedPipeline:
    """A pipeline as a run stored it when it started (the file may have changed since);
    problems name the file and say so."""
    return _pipeline(path, parse_yaml(text, f"{display_path(path)} (as at run start)"))


def _pipeline(path: Path, doc: YamlDoc) -> LoadedPipeline:
    pipeline, warnings = _validate(Pipeline, doc.data, doc.source)
    name = pipeline.metadata.name or path.stem
    problem = name_problem(name)  # metadata.name itself was checked by its model
    if problem:
        message = f"the pipeline's name {name!r} (its file name) {problem}; set metadata.name"
        raise ManifestError([Problem(doc.source.file, 1, 1, message)])
    return LoadedPipeline(name, path, pipeline, doc.source, doc.text, warnings)


def check_pipeline_file(
    root: Path, name_or_path: str
) -> tuple[LoadedPipeline | None, list[Problem]]:
    """A pipeline with its invalid values left out, and every field-level problem of it
    (None when it cannot be read or nothing valid is left); PipelineNotFound as usual."""
    path = resolve_pipeline(root, name_or_path)

    def check(text: str, shown: str) -> _Found:
        try:
            doc = parse_yaml(text, shown)
        except ManifestError as exc:
            return _Found(None, exc.problems)
        checked = check_model(Pipeline, doc.data, doc.source)
        if checked.obj is None:
            return _Found(None, checked.problems)
        name = checked.obj.metadata.name or path.stem
        problem = name_problem(name)
        if problem:
            message = f"the pipeline's name {name!r} (its file name) {problem}; set metadata.name"
            return _Found(None, [*checked.problems, Problem(doc.source.file, 1, 1, message)])
        loaded = LoadedPipeline(name, path, checked.obj, checked.source, doc.text)
        return _Found(loaded, checked.problems)

    found = _checked_file("pipeline", path, check)
    return found.loaded, found.problems
