"""The bench's own pipelines: `gold` applies the task's gold patch, `empty` changes
nothing. Each is a real pipeline (one command step), so it runs through the whole
harness as any other: a run, its workspace, its diff, the grading."""

from __future__ import annotations

from pathlib import Path

from swell.manifest.loader import LoadedPipeline, load_pipeline

PSEUDO = {
    "gold": (
        "apply",
        # `git apply` would read a workspace that is no repository relative to one
        # around it; this one is a repository (checkout.make_workspace)
        'git apply --whitespace=nowarn "{{ env.SWELL_BENCH_GOLD_PATCH }}"',
    ),
    "empty": ("nothing", "true"),
}


def is_pseudo(name: str) -> bool:
    return name in PSEUDO


def pseudo_pipeline(name: str, where: Path) -> LoadedPipeline:
    """Write the pseudo-pipeline `name` under `where` and load it."""
    step, script = PSEUDO[name]
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.yaml"
    text = (
        "kind: WavePipeline\n"
        f"metadata: {{name: {name}, description: swell bench's own {name} pipeline}}\n"
        "input: {type: string}\n"
        "steps:\n"
        f"  - id: {step}\n"
        "    type: command\n"
        f"    script: '{script}'\n"
    )
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return load_pipeline(where, str(path))
