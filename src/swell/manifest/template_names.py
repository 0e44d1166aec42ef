"""Which template variables can resolve: swell's own and Wave's namespaces.

`unresolvable(path, names)` says why a `{{ path }}` can never have a value, with a
"did you mean" when a step, artifact or variable name is close to a known one.
`not_rendered(path)` names the Wave namespaces lint accepts but that a run does not
fill yet (the checker warns about those, they render empty).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from swell.manifest.models import Step
from swell.manifest.suggest import did_you_mean

SIMPLE_VARS = {
    "input", "pipeline_id", "pipeline_name", "step_id", "workspace", "project_root",
    "branch_name", "feature_num", "sub_pipeline_stop",
}  # fmt: skip
# Wave's prefixed spellings of five of them (`{{ pipeline_context.pipeline_id }}`)
PIPELINE_CONTEXT = ("branch_name", "feature_num", "pipeline_id", "pipeline_name", "step_id")
STEP_FIELDS = {"outcome", "exit_code", "artifacts", "visit"}
# what forge detection can give (`{{ forge.type }}`); WAVE.md §7
FORGE_TYPES = ("github", "gitlab", "gitea", "forgejo", "codeberg", "bitbucket", "local")
FORGE_FIELDS = {"type", "host", "owner", "repo", "cli_tool", "prefix", "pr_term", "pr_command"}
GATE_FIELDS = {"choice", "key", "text", "timestamp", "target"}
# Wave namespaces swell's run does not fill yet: lint accepts them with a warning
NOT_RENDERED: dict[str, str] = {}
# what lint puts into scripts for the forge's code words (any forge's words read alike)
FORGE_LINT_VALUES = {"type": "github", "cli_tool": "gh", "prefix": "gh", "pr_command": "pr"}


@dataclass(frozen=True)
class Names:
    """What one step's templates may refer to."""

    steps: Mapping[str, Step]
    project: Collection[str]
    context_keys: Collection[str]
    artifacts: Collection[str]  # this step's own and injected artifact names
    dependencies: Collection[str]
    iterate: bool = False  # `item` and `iteration` are set (iterate fields)
    task: bool = False  # `task` is set (a matrix step's prompt: engine/steps/matrix.py)
    composition: bool = False  # STEP.output / STEP.out.NAME are rendered here
    gates: Collection[str] = field(default_factory=tuple)


def declared(step: Step) -> set[str]:
    """The artifact names a step produces: its outputs, an aggregate's result (Wave
    registers it under the basename of `into` without its extension) and an iterate
    step's `collected-output`."""
    names = {a.name for a in step.output_artifacts}
    if step.aggregate is not None:
        base = step.aggregate.into.rsplit("/", 1)[-1]
        names.add(base.rsplit(".", 1)[0] if "." in base else base)
    if step.iterate is not None:
        names.add("collected-output")
    if step.concurrency is not None and step.concurrency > 1:
        names.add("concurrency-results")  # engine/steps/concurrency.py
    elif step.strategy is not None:
        names.add("matrix-results")  # engine/steps/matrix.py
    return names


def not_rendered(path: tuple[str | int, ...], names: Names) -> str | None:
    """The warning for a variable lint accepts but a run leaves empty, or None."""
    root = str(path[0])
    if root in NOT_RENDERED:
        return f"swell does not render `{{{{ {root}.* }}}}` ({NOT_RENDERED[root]}) yet; it is empty"
    if root == "artifacts" and len(path) == 2 and str(path[1]) not in names.artifacts:
        name = str(path[1])
        hint = did_you_mean(name, [*names.artifacts, *names.dependencies])
        return (
            f"template variable 'artifacts.{name}' names no artifact of this step{hint}; it "
            "has a value only in a sub-pipeline whose parent hands it down (docs/composition.md)"
        )
    return None


def unresolvable(path: tuple[str | int, ...], names: Names) -> str | None:
    """Why `{{ path }}` can never resolve here, or None."""
    name = ".".join(str(p) for p in path)
    root, rest = str(path[0]), [str(p) for p in path[1:]]
    if root in SIMPLE_VARS:
        return None if not rest else f"template variable '{name}' has no fields"
    if root == "pipeline_context":
        if len(rest) == 1 and rest[0] in PIPELINE_CONTEXT:
            return None
        hint = did_you_mean(rest[0], PIPELINE_CONTEXT) if rest else ""
        return f"unknown template variable '{name}'{hint}"
    if root == "run":
        ok = rest in (["id"], ["name"])
        return None if ok else f"unknown template variable '{name}' (use run.id or run.name)"
    if root == "project":
        if rest and rest[0] in names.project:
            return None
        hint = did_you_mean(rest[0], names.project) if rest else ""
        return f"template variable '{name}' is not set in wave.yaml `project:`{hint}"
    if root == "context":
        if rest and rest[0] in names.context_keys:
            return None
        return f"template variable '{name}' is never set by any step's output.context"
    if root == "forge":
        if len(rest) == 1 and rest[0] in FORGE_FIELDS:
            return None
        hint = did_you_mean(rest[0], FORGE_FIELDS) if rest else ""
        return f"unknown template variable '{name}'{hint or ' (forge.type, forge.cli_tool, ...)'}"
    if root == "env":
        return None if len(rest) == 1 else f"template variable '{name}': use env.NAME"
    if root in ("item", "iteration"):
        if names.iterate:
            return None
        return f"template variable '{name}' is set only in an `iterate` step's pipeline and input"
    if root == "task":
        if names.task:
            return None
        return f"template variable '{name}' is set only in the prompt of a matrix `strategy` step"
    if root == "gate":
        return _gate(name, rest, names)
    if root in ("artifacts", "deps"):
        return _artifact(name, root, rest, names)
    if root == "steps":
        return _steps(name, rest, names)
    if root in names.steps:
        return _step_output(name, root, rest, names)
    hint = did_you_mean(root, [*SIMPLE_VARS, *names.steps, "project", "context", "forge"])
    return f"unknown template variable '{name}'{hint}"


def _gate(name: str, rest: list[str], names: Names) -> str | None:
    if not rest or rest[0] not in names.gates:
        hint = did_you_mean(rest[0], names.gates) if rest else ""
        return f"template variable '{name}' names no gate step{hint}"
    if len(rest) != 2 or rest[1] not in GATE_FIELDS:
        return f"template variable '{name}': use gate.ID.choice, .key, .text, .timestamp or .target"
    return None


def _artifact(name: str, root: str, rest: list[str], names: Names) -> str | None:
    if root == "artifacts" and rest and rest[0] in names.artifacts:
        return None
    # `artifacts.DEP.NAME` / `deps.DEP.NAME`: a direct dependency's artifact
    if len(rest) >= 2 and rest[0] in names.dependencies:
        produced = declared(names.steps[rest[0]]) if rest[0] in names.steps else set()
        if rest[1] in produced or names.steps[rest[0]].pipeline is not None:
            return None
        hint = did_you_mean(rest[1], produced)
        return f"template variable '{name}': step '{rest[0]}' declares no such artifact{hint}"
    if root == "deps":
        hint = did_you_mean(rest[0], names.dependencies) if rest else ""
        return f"template variable '{name}' names no dependency of this step{hint}"
    if rest and rest[0] in names.steps and names.steps[rest[0]].pipeline is not None:
        return None  # a sub-pipeline's artifacts (`artifacts.CHILD_STEP.*`)
    if root == "artifacts" and len(rest) == 1:
        return None  # a parent may hand it down (not_rendered warns)
    hint = did_you_mean(rest[0], [*names.artifacts, *names.dependencies]) if rest else ""
    return f"template variable '{name}' names no artifact of this step{hint}"


def _steps(name: str, rest: list[str], names: Names) -> str | None:
    if not rest or rest[0] not in names.steps:
        hint = did_you_mean(rest[0], names.steps) if rest else ""
        return f"template variable '{name}' names an unknown step{hint}"
    if len(rest) < 2 or rest[1] not in STEP_FIELDS:
        return f"template variable '{name}': use steps.ID.artifacts.NAME, .outcome or .exit_code"
    if rest[1] == "artifacts":
        produced = declared(names.steps[rest[0]])
        if len(rest) < 3 or rest[2] not in produced:
            hint = did_you_mean(rest[2], produced) if len(rest) >= 3 else ""
            return f"template variable '{name}': step '{rest[0]}' declares no such artifact{hint}"
    return None


def _step_output(name: str, root: str, rest: list[str], names: Names) -> str | None:
    """Wave's `{{ STEP.output[.path] }}` and `{{ STEP.out.NAME[.path] }}`: a step's
    output file content, rendered in composition fields only."""
    if not rest or rest[0] not in ("output", "out"):
        return f"template variable '{name}': use {root}.output or {root}.out.NAME"
    if not names.composition:
        return (
            f"template variable '{name}' is rendered only in composition fields "
            "(iterate.over, aggregate.from, branch.on, a sub-pipeline's input)"
        )
    if rest[0] == "out":
        produced = declared(names.steps[root])
        if len(rest) < 2 or rest[1] not in produced:
            hint = did_you_mean(rest[1], produced) if len(rest) >= 2 else ""
            return f"template variable '{name}': step '{root}' declares no such artifact{hint}"
    return None


__all__ = ["FORGE_LINT_VALUES", "FORGE_TYPES", "Names", "declared", "not_rendered", "unresolvable"]
