"""`swell init` and `swell validate`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

from swell.cli import params as typer  # typer's names, without typer (params.py)
from swell.cli.common import Output, OutputOption, print_json, project_dir


def _scaffold_files() -> list[tuple[str, bytes]]:
    from importlib.resources import files

    root = files("swell") / "scaffold"
    out: list[tuple[str, bytes]] = []

    def walk(node: object, prefix: str) -> None:
        for child in node.iterdir():  # type: ignore[attr-defined]
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                walk(child, rel + "/")
            elif child.name != "__init__.py":
                out.append((rel, child.read_bytes()))

    walk(root, "")
    return sorted(out)


def init(
    directory: Annotated[Path, typer.Argument(help="Where to create the project.")] = Path("."),
) -> None:
    """Create a Wave-format project: wave.yaml with a persona on the embedded model, a
    first pipeline that uses it (runs offline), and `.swell/` in .gitignore."""
    from swell.errors import SwellError

    written: list[str] = []
    try:
        target = directory.resolve()
        if target.exists() and not target.is_dir():
            raise SwellError(f"cannot create a project in {directory}: it is not a directory")
        existing = [n for n in ("wave.yaml", "swell.yaml") if (target / n).exists()]
        if existing:
            raise SwellError(f"{target / existing[0]} already exists; not overwriting")
        for rel, data in _scaffold_files():
            path = target / rel
            if path.exists():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            written.append(rel)
    except OSError as exc:  # read-only, a file in the way, a name too long, ...
        done = f" (created {', '.join(written)} before)" if written else ""
        where = exc.filename or directory
        raise SwellError(f"cannot write {where}: {exc.strerror or exc}{done}") from None
    for rel in written:
        print(f"created {rel}")
    ignore = _ignore_state(target)
    if ignore:
        print(ignore)
    print("next: swell validate && swell run hello --input 'add a greeting'")


GITIGNORE_ENTRY = ".swell/"


def _ignore_state(target: Path) -> str | None:
    """Add `.swell/` (swell's state) to the project's .gitignore: created if missing,
    appended to otherwise, never twice. Returns what was done, or None."""
    from swell.errors import SwellError

    path = target / ".gitignore"
    if path.is_symlink() or (path.exists() and not path.is_file()):
        return f"note: {path} is not a regular file; add {GITIGNORE_ENTRY} to it yourself"
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        entries = {line.strip().strip("/") for line in text.splitlines()}
        if ".swell" in entries or ".swell/*" in entries:
            return None
        sep = "" if not text or text.endswith("\n") else "\n"
        with path.open("a", encoding="utf-8") as fh:
            fh.write(f"{sep}# swell's runs, workspaces and logs\n{GITIGNORE_ENTRY}\n")
    except (OSError, UnicodeDecodeError) as exc:
        raise SwellError(f"cannot update {path}: {exc}") from None
    return f"{'updated' if text else 'created'} .gitignore ({GITIGNORE_ENTRY})"


def validate(
    ctx: typer.Context,
    pipeline: Annotated[
        str | None, typer.Argument(metavar="[NAME]", help="One pipeline; default: all.")
    ] = None,
    all_: Annotated[
        bool, typer.Option("--all", help="Every pipeline of the project (the default).")
    ] = False,
    output: OutputOption = Output.text,
) -> None:
    """Check wave.yaml and pipelines: fields, references, graph, templates. Every
    problem of every file is reported in one pass."""
    from swell.manifest.validation import validate_project
    from swell.registries import open_registries  # not swell.runtime: the engine

    result = validate_project(
        project_dir(ctx), open_registries().lint_context(), None if all_ else pipeline
    )
    problems, checked = result.problems, result.checked
    errors = [p for p in problems if p.severity == "error"]
    if output is Output.json:
        print_json(
            {
                "ok": not errors,
                "pipelines": checked,
                "failed": result.failed,
                "problems": [
                    {
                        "file": p.file,
                        "line": p.line,
                        "col": p.col,
                        "severity": p.severity,
                        "message": p.message,
                    }
                    for p in problems
                ],
            }
        )
    else:
        for p in problems:
            print(str(p), file=sys.stderr)
        if not errors:
            print(
                f"ok: {result.manifest_name} and {len(checked)} pipeline"
                f"{'s' if len(checked) != 1 else ''} ({', '.join(checked) or 'none'})"
            )
        else:
            print(f"{len(errors)} error{'s' if len(errors) != 1 else ''} found", file=sys.stderr)
    if errors:
        raise typer.Exit(1)
