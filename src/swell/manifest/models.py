"""Pydantic models of wave.yaml (WaveManifest) and pipeline files (WavePipeline).

Every model forbids unknown fields. Wave fields that change nothing a run does (in
Wave either) are listed in `IGNORED`; Wave fields that would change behaviour but whose
runtime swell does not execute yet are listed in `NOT_RUN` (the loader warns when one
is set); `UNSUPPORTED` fields are refused. docs/manifest.md gives every field's
decision. The models of Wave's less central fields are in `wave_models.py`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import ConfigDict, Field, field_validator

from swell.manifest.models_base import KindFields, Strict
from swell.manifest.wave_models import (
    AggregateConfig,
    ArtifactsConfig,
    AuditConfig,
    BranchConfig,
    ChatContext,
    CircuitBreakerConfig,
    CostConfig,
    Deliverable,
    EvolutionConfig,
    InputSchema,
    IterateConfig,
    LifecycleHook,
    LoopConfig,
    MatrixStrategy,
    MetaConfig,
    PersonaHooks,
    PersonaSandbox,
    PipelineOutput,
    RelayConfig,
    RetrosConfig,
    RoutingConfig,
    SandboxConfig,
    Schedule,
    ServerConfig,
    SkillConfig,
    StepInput,
    SubPipelineConfig,
    Timeouts,
    ValidationRule,
    check_duration,
    check_tiers,
    check_token_scopes,
)

Fidelity = Literal["full", "compact", "summary", "fresh"]

# a name swell makes a file or directory name of (run ids, artifact files) stays this short
MAX_NAME_BYTES = 200


def name_problem(value: str) -> str | None:
    """Why `value` cannot be one file name inside swell's directories, or None.

    Pipeline names become run ids (`.swell/runs/<id>`, `.swell/workspaces/<id>`) and
    artifact names become file names, so none may be empty, `.`/`..`, hold a path
    separator or a control character (NUL included), or be too long for a file name.
    """
    if not value:
        return "must not be empty"
    if value in (".", ".."):
        return f"must not be '{value}'"
    if "/" in value or "\\" in value:
        return "must not contain '/' or '\\' (it becomes a file name)"
    if any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in value):
        return "must not contain control characters"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"must be at most {MAX_NAME_BYTES} bytes long"
    return None


def _file_name(value: str | None) -> str | None:
    """A pydantic validator: `value` must be usable as one file name."""
    problem = None if value is None else name_problem(value)
    if problem:
        raise ValueError(problem)
    return value


def branch_problem(value: str) -> str | None:
    """Why `value` cannot be a worktree branch, or None: a relative git ref that cannot
    leave the workspace's `worktrees/` directory (checked as written, and once a
    templated branch is rendered)."""
    if not value.strip():
        return "must not be empty"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value) or "\\" in value:
        return "must not contain control characters or '\\'"
    if value.startswith(("/", "-")):
        return "must not start with '/' or '-'"
    if ".." in value or any(part in ("", ".") for part in value.split("/")):
        return "must not contain '..' or empty or '.' parts between '/'"
    if len(value.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"must be at most {MAX_NAME_BYTES} bytes long"
    return None


def _branch_name(value: str | None) -> str | None:
    """A pydantic validator: a worktree branch (see `branch_problem`)."""
    problem = None if value is None else branch_problem(value)
    if problem:
        raise ValueError(problem)
    return value


# --------------------------------------------------------------------------- manifest


class Permissions(Strict):
    allowed_tools: list[str] = Field(default_factory=list)
    deny: list[str] = Field(default_factory=list)


class Metadata(Strict):
    name: str | None = None
    description: str | None = None
    repo: str | None = None
    forge: str | None = None

    IGNORED = ("name", "description", "repo")  # Wave shows them in its TUI


class AdapterConfig(Strict):
    """`adapters.NAME`: which implementation runs it and its defaults."""

    type: str | None = None  # implementation; defaults to the adapter's key
    binary: str | None = None
    default_model: str | None = None
    tier_models: dict[str, str] = Field(default_factory=dict)  # tier -> model
    default_permissions: Permissions = Field(default_factory=Permissions)
    options: dict[str, Any] = Field(default_factory=dict)  # validated by the adapter
    mode: str | None = None
    output_format: str | None = None
    project_files: list[str] = Field(default_factory=list)
    hooks_template: str | None = None

    NOT_RUN = {"hooks_template": "adapter hook templates"}
    # Wave requires `mode` and reads none of them when it runs an adapter
    IGNORED = ("mode", "output_format", "project_files")

    _tiers = field_validator("tier_models")(check_tiers)


class Persona(Strict):
    adapter: str | None = None
    description: str | None = None
    system_prompt_file: str | None = None
    system_prompt: str | None = None
    temperature: float | None = None
    model: str | None = None
    permissions: Permissions = Field(default_factory=Permissions)
    hooks: PersonaHooks = Field(default_factory=PersonaHooks)
    sandbox: PersonaSandbox | None = None
    skills: list[str] = Field(default_factory=list)
    token_scopes: list[str] = Field(default_factory=list)

    NOT_RUN = {"hooks": "persona tool hooks"}

    _scopes = field_validator("token_scopes")(check_token_scopes)


class TemporalConfig(Strict):
    """`runtime.temporal`: where the Temporal executor's server is (docs/scale-out.md);
    $SWELL_TEMPORAL_ADDRESS / $SWELL_TEMPORAL_QUEUE win over it."""

    address: str | None = None  # host:port, default 127.0.0.1:7233
    namespace: str | None = None  # default `default`
    queue: str | None = None  # the task queue its workers poll, default `swell`
    # run visits on the worker that drives the run, as local activities (short steps)
    local_visits: bool = False
    # visits one workflow execution runs before it continues as new (default 1000)
    continue_after: int | None = Field(default=None, ge=1)
    # a bare git remote (path or URL) each visit's workspace changes are pushed to, for
    # workers on other hosts to fetch; $SWELL_WORKSPACE_REMOTE wins over it
    remote: str | None = None
    # seconds a visit waits for the worker with the run's warm workspace before any
    # worker may take it (the sticky per-worker queue); 0: no stickiness
    sticky_seconds: float | None = Field(default=None, ge=0)


class Runtime(Strict):
    workspace_root: str | None = None
    # who drives runs: `local` (this process, the default) or `temporal` (swell workers)
    engine: Literal["local", "temporal"] | None = None
    temporal: TemporalConfig = Field(default_factory=TemporalConfig)
    # where runs are kept (store/location.py): a path, sqlite:///PATH or postgresql://...;
    # $SWELL_STORE wins over it; unset, SQLite in the state directory
    store: str | None = None
    max_concurrency: int | None = Field(default=None, ge=1)
    max_concurrent_workers: int | None = Field(default=None, ge=1)
    default_timeout_minutes: float | None = Field(default=None, gt=0)
    pipeline_id_hash_length: int | None = None
    timeouts: Timeouts = Field(default_factory=Timeouts)
    relay: RelayConfig = Field(default_factory=RelayConfig)
    circuit_breaker: CircuitBreakerConfig = Field(default_factory=CircuitBreakerConfig)
    artifacts: ArtifactsConfig = Field(default_factory=ArtifactsConfig)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    meta_pipeline: MetaConfig = Field(default_factory=MetaConfig)
    routing: RoutingConfig = Field(default_factory=RoutingConfig)
    sandbox: SandboxConfig | None = None
    stall_timeout: str | None = None
    fallbacks: dict[str, list[str]] = Field(default_factory=dict)
    cost: CostConfig = Field(default_factory=CostConfig)
    retros: RetrosConfig = Field(default_factory=RetrosConfig)

    NOT_RUN = {
        "workspace_root": "workspaces outside .swell/workspaces",
        "audit": "audit trace files",
    }
    # limits of Wave's meta pipelines (swell has none); the length of Wave's run ids
    IGNORED = ("meta_pipeline", "pipeline_id_hash_length")

    _stall = field_validator("stall_timeout")(check_duration)

    @property
    def concurrency(self) -> int:
        return self.max_concurrency or self.max_concurrent_workers or 5

    @property
    def step_timeout_seconds(self) -> float:
        minutes = self.default_timeout_minutes or self.timeouts.step_default_minutes or 30
        return minutes * 60


class Manifest(Strict):
    """`wave.yaml` / `swell.yaml`."""

    apiVersion: str | None = None
    kind: Literal["WaveManifest", "SwellManifest"]
    metadata: Metadata = Field(default_factory=Metadata)
    project: dict[str, Any] = Field(default_factory=dict)  # any YAML value (lists, services)
    ontology: Any = None
    adapters: dict[str, AdapterConfig] = Field(default_factory=dict)
    personas: dict[str, Persona] = Field(default_factory=dict)
    runtime: Runtime = Field(default_factory=Runtime)
    server: ServerConfig | None = None
    skills: list[str] = Field(default_factory=list)
    hooks: list[LifecycleHook] = Field(default_factory=list)
    evolution: EvolutionConfig | None = None
    schedules: list[Schedule] = Field(default_factory=list)  # run by `swell watch`

    NOT_RUN = {"server": "server mode", "evolution": "pipeline evolution triggers"}
    # Wave checks neither; it dropped ontologies
    IGNORED = ("apiVersion", "ontology")

    def adapter_type(self, name: str) -> str:
        """The implementation behind adapter `name` (its `type`, else the name)."""
        config = self.adapters.get(name)
        if config and config.type:
            return config.type
        # Wave runs `opencode-*` entries (opencode-glm, ...) with the opencode runner and
        # that entry's `binary`
        if name.lower().startswith("opencode-"):
            return "opencode"
        return name


# --------------------------------------------------------------------------- pipeline


class PipelineMetadata(Strict):
    name: str | None = None
    description: str | None = None
    release: bool | None = None
    category: str | None = None
    disabled: bool | None = None

    # Wave's catalogue and web UI show them (`release` picks what `wave init` ships)
    IGNORED = ("release", "category")
    # Wave does not read it either, but whoever sets it means the pipeline not to run
    NOT_RUN = {"disabled": "disabling a pipeline"}

    _name = field_validator("name")(_file_name)


# Wave's pipeline I/O types (`input.type`): free text, or a reference to something
InputType = Literal[
    "string", "branch_ref", "findings_report", "issue_ref", "plan_ref", "pr_ref",
    "scope_result", "spec_ref", "work_item_ref", "workspace_ref",
]  # fmt: skip


class InputConfig(Strict):
    source: str | None = None
    schema_: InputSchema | None = Field(default=None, alias="schema")
    example: str | None = None
    label_filter: str | None = None
    batch_size: int | None = Field(default=None, ge=0)
    type: InputType | None = None

    IGNORED = ("source", "schema")  # Wave's TUI shows them
    # label_filter and batch_size act under `swell watch` (docs/service.md)

    @property
    def required(self) -> bool:
        """Whether a run needs `--input`: Wave never checks the input; swell requires one
        when the pipeline declares a typed input (a reference such as `issue_ref` names
        something, and an empty one names nothing). Free text (`string`, or no `type`)
        stays optional."""
        return self.type is not None and self.type != "string"


class Requires(Strict):
    tools: list[str] = Field(default_factory=list)
    skills: dict[str, SkillConfig] = Field(default_factory=dict)


class Edge(Strict):
    target: str
    condition: str | None = None


class Exec(Strict):
    type: Literal["prompt", "command", "slash_command"] = "prompt"
    source: str | None = None
    source_path: str | None = None
    command: str | None = None
    args: str | None = None


class ArtifactDef(Strict):
    name: str
    path: str | None = None
    type: str | None = None
    required: bool = False
    source: Literal["file", "stdout"] = "file"

    _name = field_validator("name")(_file_name)


class ArtifactRef(Strict):
    step: str | None = None
    artifact: str
    as_: str | None = Field(default=None, alias="as")
    type: str | None = None
    schema_path: str | None = None
    optional: bool = False
    pipeline: str | None = None  # another pipeline's `pipeline_outputs` name

    NOT_RUN = {"schema_path": "checking an injected artifact against a schema"}

    # the copy's file name is `as`, else `artifact`
    _names = field_validator("artifact", "as_")(_file_name)


class Memory(Strict):
    strategy: str | None = None
    inject_artifacts: list[ArtifactRef] = Field(default_factory=list)

    IGNORED = ("strategy",)  # Wave's one strategy is `fresh`, and it reads it nowhere


class Mount(Strict):
    source: str
    target: str | None = None
    mode: Literal["readonly", "readwrite"] | None = None
    subset_from: str | None = None  # "STEP.ARTIFACT[.json.path]": copy only the files it lists


class WorkspaceConfig(Strict):
    type: Literal["worktree", "basic"] | None = None
    root: str | None = None
    mount: list[Mount] = Field(default_factory=list)
    branch: str | None = None
    base: str | None = None
    ref: str | None = None

    IGNORED = ("root",)  # Wave reads runtime.workspace_root, never this

    _branch = field_validator("branch")(_branch_name)


class Contract(Strict):
    """One handover contract: the envelope every type shares. The other fields are the
    type's own settings, validated by the type's `Settings` model (`swell validate`)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)

    type: str
    on_failure: (
        Literal["fail", "retry", "rework", "continue", "warn", "skip", "rejected"] | None
    ) = None
    must_pass: bool | None = None
    max_retries: int | None = None
    rework_step: str | None = None
    validate_: bool | None = Field(default=None, alias="validate")

    NOT_RUN = {"max_retries": "a contract's own retry limit"}
    IGNORED = ("validate",)  # Wave reads it nowhere

    @property
    def settings(self) -> dict[str, Any]:
        """The type's own fields, as written."""
        return dict(self.model_extra or {})


class Compaction(Strict):
    trigger: str | None = None
    persona: str | None = None


class Handover(Strict):
    contract: Contract | None = None
    contracts: list[Contract] = Field(default_factory=list)
    compaction: Compaction | None = None
    on_review_fail: str | None = None
    target_step: str | None = None

    IGNORED = ("on_review_fail", "target_step")  # Wave reads them nowhere

    @property
    def all_contracts(self) -> list[Contract]:
        """The contracts that run: `contracts` when it has any, else `contract`, as
        Wave's EffectiveContracts (lint warns when both are written)."""
        if self.contracts:
            return list(self.contracts)
        return [self.contract] if self.contract else []


class Retry(Strict):
    policy: Literal["none", "standard", "aggressive", "patient"] | None = None
    max_attempts: int | None = Field(default=None, ge=1)
    backoff: Literal["fixed", "linear", "exponential"] | None = None
    base_delay: str | int | float | None = None
    max_delay: str | int | float | None = None
    adapt_prompt: bool | None = None
    on_failure: Literal["fail", "skip", "continue", "warn", "rework"] | None = None
    rework_step: str | None = None
    no_escalate: bool = False  # engine/agent/tiers.py: a retry keeps its tier

    # Wave's deprecated switch: a retry's prompt always carries the failure
    IGNORED = ("adapt_prompt",)


class GateChoice(Strict):
    label: str
    key: str
    target: str | None = None


class Gate(Strict):
    type: Literal["approval", "timer", "pr_merge", "ci_pass"] = "approval"
    timeout: str | int | float | None = None
    message: str | None = None
    prompt: str | None = None
    choices: list[GateChoice] = Field(default_factory=list)
    default: str | None = None
    auto: bool = False
    freeform: bool = False
    tui_action: str | None = None
    pr_number: int | None = None
    repo: str | None = None
    branch: str | None = None
    interval: str | None = None

    # `freeform`: a decision may always carry a note (`swell approve --text`); the last
    # four are read by `pr_merge`/`ci_pass` gates only, which swell refuses
    IGNORED = ("tui_action", "freeform", "pr_number", "repo", "branch", "interval")


class StepOutput(Strict):
    context: dict[str, str | int | float | bool] = Field(default_factory=dict)


class Step(KindFields):  # a plugin kind's own fields beside its `type` (models_base.py)
    id: str
    type: str | None = None
    persona: str | None = None
    adapter: str | None = None
    model: str | None = None
    dependencies: list[str] = Field(default_factory=list)
    exec: Exec | None = None
    script: str | None = None
    edges: list[Edge] = Field(default_factory=list)
    max_visits: int = Field(default=10, ge=1)
    thread: str | None = None
    fidelity: Fidelity | None = None
    output: StepOutput | None = None
    memory: Memory = Field(default_factory=Memory)
    output_artifacts: list[ArtifactDef] = Field(default_factory=list)
    handover: Handover | None = None
    retry: Retry | None = None
    gate: Gate | None = None
    pipeline: str | None = None
    input: str | None = None
    timeout_minutes: float | None = Field(default=None, gt=0)
    workspace: WorkspaceConfig | None = None
    rework_only: bool = False
    optional: bool = False
    contexts: Any = None
    outcomes: list[Deliverable] = Field(default_factory=list)
    strategy: MatrixStrategy | None = None
    validation: list[ValidationRule] = Field(default_factory=list)
    max_concurrent_agents: int | None = Field(default=None, ge=0)
    concurrency: int | None = Field(default=None, ge=0)
    skills: list[str] = Field(default_factory=list)
    permissions: Permissions | None = None
    input_ref: StepInput | None = None
    config: SubPipelineConfig | None = None
    iterate: IterateConfig | None = None
    branch: BranchConfig | None = None
    loop: LoopConfig | None = None
    aggregate: AggregateConfig | None = None

    NOT_RUN = {"validation": "validation rules", "input_ref": "typed sub-pipeline input"}
    IGNORED = ("contexts",)  # Wave's docs' ontology contexts; Wave dropped ontologies

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        # a step id is a directory name under the run's directory: this shape cannot be
        # '.', '..', absolute, or hold a separator, NUL or a newline (fullmatch, not $)
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", value):
            raise ValueError(
                "step id must start with a letter or digit and use only letters, digits, '-', '_', '.'"
            )
        if len(value) > MAX_NAME_BYTES:
            raise ValueError(f"step id must be at most {MAX_NAME_BYTES} characters long")
        return value

    @property
    def kind(self) -> str:
        """The step type: explicit `type`, else inferred from the fields present."""
        # Wave's fan-out first, as Wave decides (engine/steps/concurrency.py, matrix.py):
        # its lint rejects a `type` or `script` that cannot fan out
        if self.concurrency is not None and self.concurrency > 1:
            return "concurrency"
        if self.strategy is not None:
            return "matrix"
        if self.type:
            return self.type
        # Wave's composition steps, in Wave's precedence (engine/steps/<field>.py)
        for field in ("iterate", "aggregate", "branch", "loop"):
            if getattr(self, field) is not None:
                return field
        if self.pipeline:
            return "pipeline"
        if self.gate:
            return "gate"
        if self.script is not None or (self.exec is not None and self.exec.type == "command"):
            return "command"
        return "prompt"


class Pipeline(Strict):
    kind: Literal["WavePipeline", "SwellPipeline"]
    metadata: PipelineMetadata = Field(default_factory=PipelineMetadata)
    input: InputConfig = Field(default_factory=InputConfig)
    requires: Requires = Field(default_factory=Requires)
    steps: list[Step]
    max_step_visits: int = Field(default=50, ge=1)
    pipeline_outputs: dict[str, PipelineOutput] = Field(default_factory=dict)
    chat_context: ChatContext | None = None
    skills: list[str] = Field(default_factory=list)
    hooks: list[LifecycleHook] = Field(default_factory=list)

    IGNORED = ("chat_context",)  # for Wave's chat about a finished run

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)
