"""Pydantic models of the Wave fields swell accepts beyond its core (`models.py`).

They are here so `models.py` stays the map of what swell runs. Each model checks
types and allowed values the way Wave's decoder and loader do; a field whose runtime
swell does not execute yet is listed in its model's `NOT_RUN`, and the loader turns
it into a named warning ("swell does not run `X` yet; it is ignored").
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from swell.manifest.models_base import Strict

NonNegative = Annotated[float, Field(ge=0)]

# Wave's model tiers (`model: cheapest`); `routing.complexity_map` and `tier_models` map them
Tier = Literal["cheapest", "balanced", "strongest"]
TIERS: tuple[str, ...] = ("cheapest", "balanced", "strongest")

# Wave's shared pipeline I/O type names (`input.type`, `pipeline_outputs.*.type`):
# free text, or a reference to something (internal/contract/schemas/shared)
SHARED_TYPES: tuple[str, ...] = (
    "string", "branch_ref", "findings_report", "issue_ref", "plan_ref", "pr_ref",
    "scope_result", "spec_ref", "work_item_ref", "workspace_ref",
)  # fmt: skip

# --------------------------------------------------------------------------- wave.yaml

_SCOPE = re.compile(r"(issues|pulls|repos|actions|packages):(read|write|admin)(@[A-Za-z_]\w*)?")
_DURATION = re.compile(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+|0")


def check_token_scopes(value: list[str]) -> list[str]:
    """`personas.*.token_scopes`: Wave's form RESOURCE:LEVEL[@ENV]."""
    for scope in value:
        if not _SCOPE.fullmatch(scope):
            raise ValueError(
                f"token scope {scope!r} must look like RESOURCE:LEVEL[@ENV] (resource: "
                "issues, pulls, repos, actions, packages; level: read, write, admin)"
            )
    return value


def check_duration(value: str | None) -> str | None:
    """A Go duration ("10m", "90s", "1h30m"). Wave silently disables the stall
    watchdog on a bad one; swell says so."""
    if value is not None and not _DURATION.fullmatch(value):
        raise ValueError(f"{value!r} must be a duration such as 10m or 90s")
    return value


def check_tiers(value: dict[str, str]) -> dict[str, str]:
    """`tier_models` keys are tiers."""
    wrong = sorted(set(value) - set(TIERS))
    if wrong:
        raise ValueError(f"unknown tier(s) {', '.join(wrong)} (tiers: {', '.join(TIERS)})")
    return value


class Timeouts(Strict):
    # none may be negative, as Wave checks (internal/manifest/parser.go)
    step_default_minutes: NonNegative | None = None
    relay_compaction_minutes: NonNegative | None = None
    meta_default_minutes: NonNegative | None = None
    skill_install_seconds: NonNegative | None = None
    skill_cli_seconds: NonNegative | None = None
    skill_http_seconds: NonNegative | None = None
    skill_http_header_seconds: NonNegative | None = None
    skill_publish_seconds: NonNegative | None = None
    process_grace_seconds: NonNegative | None = None
    stdout_drain_seconds: NonNegative | None = None
    gate_approval_hours: NonNegative | None = None
    gate_poll_interval_seconds: NonNegative | None = None
    gate_poll_timeout_minutes: NonNegative | None = None
    git_command_seconds: NonNegative | None = None
    forge_api_seconds: NonNegative | None = None
    retry_max_delay_seconds: NonNegative | None = None

    NOT_RUN = {"gate_approval_hours": "a default timeout for approval gates"}
    # Wave reads none of these from wave.yaml (it uses built-in values), and
    # meta_default_minutes times Wave's meta pipelines, which swell does not have
    IGNORED = (
        "meta_default_minutes", "skill_cli_seconds", "skill_http_seconds",
        "skill_http_header_seconds", "skill_publish_seconds", "stdout_drain_seconds",
        "gate_poll_interval_seconds", "gate_poll_timeout_minutes", "git_command_seconds",
        "forge_api_seconds",
    )  # fmt: skip


class RelayConfig(Strict):
    strategy: str | None = None
    token_threshold_percent: float | None = None
    context_window: int | None = None
    summarizer_persona: str | None = None
    max_relays: int | None = Field(default=None, ge=1)
    summarizer_max_tokens: int | None = Field(
        default=None, gt=0
    )  # history beyond this halts the run


class CircuitBreakerConfig(Strict):
    limit: int = Field(default=3, ge=1)
    tracked_classes: list[str] = Field(default_factory=list)

    NOT_RUN = {"tracked_classes": "choosing the failure classes the breaker counts"}


class ArtifactsConfig(Strict):
    max_stdout_size: int | None = Field(default=None, gt=0)
    default_artifact_dir: str | None = None

    NOT_RUN = {"default_artifact_dir": "a directory for stdout artifacts"}


class CostConfig(Strict):
    """`runtime.cost`: the run's cost ledger (engine/loop/cost.py)."""

    enabled: bool = False
    budget_ceiling: float = Field(default=0.0, ge=0)
    warn_at: float = Field(default=0.0, ge=0)
    currency: str | None = None

    @property
    def active(self) -> bool:
        """Wave's rule: the ledger is on when enabled or when a ceiling is set."""
        return self.enabled or self.budget_ceiling > 0


class RoutingRule(Strict):
    pattern: str | None = None
    pipeline: str
    priority: int = 0
    match_labels: dict[str, str] = Field(default_factory=dict)


class RoutingConfig(Strict):
    """`runtime.routing`: tiers to models, and (for `wave do`) inputs to pipelines."""

    default: str | None = None
    rules: list[RoutingRule] = Field(default_factory=list)
    auto_route: bool = False
    complexity_map: dict[Tier, str] = Field(default_factory=dict)
    default_tier: Tier | None = None

    # `rules` and `default` route `swell watch` items and webhooks (service/routing.py)
    NOT_RUN = {
        # Wave reads `default_tier` nowhere either (auto_route falls back to balanced)
        "default_tier": "a default tier"
    }


class Schedule(Strict):
    """One entry of `schedules:` (swell's; Wave keeps schedules in its state database
    with the same fields): run `pipeline` with `input` at each tick of `cron` (five
    fields) in `timezone` (an IANA name; UTC by default). docs/service.md."""

    pipeline: str
    cron: str
    input: str = ""
    timezone: str = "UTC"
    name: str | None = None  # its dispatch source is `schedule:NAME` (default: the pipeline)
    active: bool = True

    @property
    def key_name(self) -> str:
        return self.name or self.pipeline

    # checked when the project loads (`swell validate`, `run`, `serve`), at their line,
    # not first when `swell watch` starts firing them
    @field_validator("cron")
    @classmethod
    def _cron_parses(cls, text: str) -> str:
        from swell.service.cron import CronError, parse

        try:
            parse(text)
        except CronError as exc:  # a ValueError is what pydantic shows at the line
            raise ValueError(str(exc)) from None
        return text

    @field_validator("timezone")
    @classmethod
    def _zone_known(cls, name: str) -> str:
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown timezone `{name}` (an IANA name: Europe/Berlin)") from None
        return name


class SandboxConfig(Strict):
    enabled: bool = False
    backend: Literal["none", "bubblewrap", "docker"] | None = None
    docker_image: str | None = None
    default_allowed_domains: list[str] = Field(default_factory=list)
    env_passthrough: list[str] = Field(default_factory=list)
    # swell's own (docs/security.md, "Sandbox"): processes a visit's sandbox may hold at
    # once, and MiB its private /tmp may hold
    pids_limit: int = Field(default=1024, ge=16)
    tmp_size_mb: int = Field(default=1024, ge=1)


class AuditConfig(Strict):
    log_dir: str | None = None
    log_all_tool_calls: bool = False
    log_all_file_operations: bool = False


class MetaConfig(Strict):
    max_depth: int | None = Field(default=None, ge=0)
    max_total_steps: int | None = Field(default=None, ge=0)
    max_total_tokens: int | None = Field(default=None, ge=0)
    timeout_minutes: float | None = Field(default=None, ge=0)


class RetrosConfig(Strict):
    enabled: bool | None = None
    narrate: bool | None = None
    narrate_model: str | None = None


class ServerAuth(Strict):
    mode: str | None = None
    jwt_secret: str | None = None


class ServerTLS(Strict):
    enabled: bool = False
    cert: str | None = None
    key: str | None = None
    ca: str | None = None


class ServerConfig(Strict):
    bind: str | None = None
    max_concurrent: int | None = Field(default=None, ge=0)
    auth: ServerAuth = Field(default_factory=ServerAuth)
    tls: ServerTLS = Field(default_factory=ServerTLS)


class EvolutionConfig(Strict):
    enabled: bool | None = None
    every_n_window: int | None = None
    every_n_judge_drop: float | None = None
    drift_window: int | None = None
    drift_pass_drop: float | None = None
    retry_window: int | None = None
    retry_avg_threshold: float | None = None


# Wave's lifecycle events (internal/hooks/hooks.go) and swell's gate_waiting
HookEvent = Literal[
    "run_start", "run_completed", "run_failed", "step_start", "step_completed",
    "step_failed", "step_retrying", "contract_validated", "artifact_created",
    "workspace_created", "gate_waiting",
]  # fmt: skip
_HOOK_NEEDS = {"command": "command", "http": "url", "llm_judge": "prompt", "script": "script"}


class LifecycleHook(Strict):
    name: str
    event: HookEvent
    type: Literal["command", "http", "llm_judge", "script"]
    command: str | None = None
    url: str | None = None
    model: str | None = None
    prompt: str | None = None
    script: str | None = None
    matcher: str | None = None
    blocking: bool | None = None
    fail_open: bool | None = None
    timeout: str | None = None

    # swell's hooks notify: they never hold up or fail a run (docs/service.md)
    NOT_RUN = {
        "blocking": "blocking hooks; swell's hooks never hold up a run",
        "prompt": "llm_judge hooks",
    }
    IGNORED = ("fail_open", "model")  # a notification never fails a run; llm_judge's model

    @model_validator(mode="after")
    def _complete(self) -> LifecycleHook:
        """What Wave's loader checks (manifest/parser.go): the field the type needs,
        and a matcher that compiles."""
        needed = _HOOK_NEEDS[self.type]
        if not str(getattr(self, needed) or "").strip():
            raise ValueError(f"`{needed}` is required for {self.type} hooks")
        if self.matcher:
            try:
                re.compile(self.matcher)
            except re.error as exc:
                raise ValueError(
                    f"matcher {self.matcher!r} is not a regular expression: {exc}"
                ) from None
        return self


class HookRule(Strict):
    matcher: str | None = None
    command: str


class PersonaHooks(Strict):
    PreToolUse: list[HookRule] = Field(default_factory=list)
    PostToolUse: list[HookRule] = Field(default_factory=list)


class PersonaSandbox(Strict):
    allowed_domains: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- pipelines


class InputSchema(Strict):
    type: str | None = None
    description: str | None = None


class PipelineOutput(Strict):
    """`pipeline_outputs.NAME`: a step's artifact this pipeline exposes under NAME."""

    step: str
    artifact: str
    field: str | None = None  # a JSON path into the artifact
    type: str | None = None


class ChatContext(Strict):
    artifact_summaries: list[str] = Field(default_factory=list)
    suggested_questions: list[str] = Field(default_factory=list)
    focus_areas: list[str] = Field(default_factory=list)
    max_context_tokens: int | None = Field(default=None, ge=0)


class SkillConfig(Strict):
    """`requires.skills.NAME`: how an external skill is installed and checked."""

    install: str | None = None
    init: str | None = None
    check: str | None = None
    commands_glob: str | None = None
    optional: bool = False

    NOT_RUN = {"init": "skill init commands", "commands_glob": "skill command files"}


OutcomeType = Literal["pr", "issue", "url", "deployment", "file", "artifact"]


class Deliverable(Strict):
    """`outcomes[]`: a deliverable read from a step's output file."""

    type: OutcomeType
    extract_from: str
    json_path: str | None = None
    json_path_label: str | None = None
    label: str | None = None

    @model_validator(mode="after")
    def _path_needed(self) -> Deliverable:
        # file and artifact outcomes register the file itself; the others read a value
        # (`.` alone names no value either: Wave refuses it, internal/pipeline/outcomes.go)
        if self.type not in ("file", "artifact") and not (self.json_path or "").strip(" ."):
            raise ValueError(f"a `{self.type}` outcome needs `json_path`")
        return self


class MatrixStrategy(Strict):
    type: str
    items_source: str | None = None
    item_key: str | None = None
    max_concurrency: int | None = Field(default=None, ge=0)
    item_id_key: str | None = None
    dependency_key: str | None = None
    child_pipeline: str | None = None
    input_template: str | None = None
    stacked: bool = False

    NOT_RUN = {"stacked": "stacked matrix branches"}


class ValidationRule(Strict):
    type: str
    target: str | None = None
    schema_: str | None = Field(default=None, alias="schema")
    on_failure: str | None = None
    max_retries: int | None = None


class IterateConfig(Strict):
    over: str
    mode: Literal["parallel", "sequential"] | None = None
    max_concurrent: int | None = Field(default=None, ge=0)
    on_failure: Literal["fail", "continue", "skip"] | None = None


class BranchConfig(Strict):
    on: str
    cases: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        # YAML 1.1 reads the key `on` as true; Wave's decoder (YAML 1.2) reads "on"
        if isinstance(data, dict) and "on" not in data:
            data = {("on" if k in (True, "True") else k): v for k, v in data.items()}
        return data


class AggregateConfig(Strict):
    from_: str = Field(alias="from")
    into: str
    strategy: Literal["merge_arrays", "concat", "reduce"]
    key: str | None = None


class SubPipelineConfig(Strict):
    inject: list[str] = Field(default_factory=list)
    extract: list[str] = Field(default_factory=list)
    timeout: str | None = None
    max_cycles: int | None = Field(default=None, ge=0)
    stop_condition: str | None = None
    env: dict[str, str] = Field(default_factory=dict)


class StepInput(Strict):
    from_: str | None = Field(default=None, alias="from")
    literal: str | None = None


class LoopConfig(Strict):
    # unset: the `config.max_cycles` of the step that runs this pipeline as a child
    max_iterations: int | None = Field(default=None, ge=1)
    until: str | None = None
    # Wave's sub-steps: each is checked as a step by the loop kind (engine/steps/loop.py)
    steps: list[dict[str, Any]] = Field(default_factory=list)


__all__ = [
    "SHARED_TYPES",
    "TIERS",
    "AggregateConfig",
    "ArtifactsConfig",
    "AuditConfig",
    "BranchConfig",
    "ChatContext",
    "CircuitBreakerConfig",
    "CostConfig",
    "Deliverable",
    "EvolutionConfig",
    "InputSchema",
    "IterateConfig",
    "LifecycleHook",
    "LoopConfig",
    "MatrixStrategy",
    "MetaConfig",
    "PersonaHooks",
    "PersonaSandbox",
    "PipelineOutput",
    "RelayConfig",
    "RetrosConfig",
    "RoutingConfig",
    "SandboxConfig",
    "ServerConfig",
    "SkillConfig",
    "StepInput",
    "SubPipelineConfig",
    "Tier",
    "Timeouts",
    "ValidationRule",
]
