"""The public plugin surface: everything a step kind, a contract type, an adapter or a
store backend imports to extend swell, and nothing else. A plugin imports only this
module; swell's own kinds, types, adapters and stores are built on the same classes and
register through the same entry-point groups (swell/registry.py):

    [project.entry-points."swell.step_kinds"]      NAME = "module:KIND"   # a StepKind
    [project.entry-points."swell.contract_types"]  NAME = "module:TYPE"   # a ContractType
    [project.entry-points."swell.adapters"]        NAME = "module:Class"  # AdapterSetup -> AgentAdapter
    [project.entry-points."swell.stores"]          SCHEME = "module:open" # location -> Store

Names outside `__all__` (and modules other than this one) are internal and change
without notice; docs/architecture.md ("Plugins") shows one plugin of each kind.
"""

from __future__ import annotations

from swell.adapters.base import (
    AdapterSetup,
    AgentAdapter,
    AgentArtifact,
    AgentEvent,
    AgentFinished,
    AgentRequest,
    AgentResult,
    AgentSessionStarted,
    AgentText,
    AgentToolCall,
    AgentToolResult,
    AgentTurnEnded,
    AgentUsageUpdate,
    Capabilities,
    Usage,
)
from swell.adapters.cli_agent import CliAdapter, CliStream, Launch
from swell.adapters.permissions import Unenforced
from swell.contracts.base import (
    AgentAnswer,
    AgentCall,
    ContractContext,
    ContractResult,
    ContractSettings,
    ContractType,
    ReviewFeedback,
    ReviewIssue,
)
from swell.engine.loop.graph import Activation
from swell.engine.loop.state import RunState
from swell.engine.steps.base import StepKind
from swell.engine.visit.context import StepResult, VisitContext
from swell.engine.visit.output_context import output_namespace
from swell.errors import (
    AgentCrashed,
    AgentError,
    AgentTimeout,
    AuthFailed,
    BinaryMissing,
    ContextExhausted,
    Problem,
    RateLimited,
    StoreError,
    SwellError,
    UnparseableOutput,
)
from swell.events.models import Progress
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.process import ProcessResult
from swell.store.memory import MemoryDatabase, MemoryStore
from swell.store.protocols import (
    Capability,
    Claims,
    Dispatch,
    Notify,
    OutputStore,
    PageSource,
    RunReader,
    RunWriter,
    StatsReader,
    Store,
    ThreadReader,
)
from swell.templates.render import render_text
from swell.workspace.paths import PathEscape, inside

__all__ = [
    "Activation",
    "AdapterSetup",
    "AgentAdapter",
    "AgentAnswer",
    "AgentArtifact",
    "AgentCall",
    "AgentCrashed",
    "AgentError",
    "AgentEvent",
    "AgentFinished",
    "AgentRequest",
    "AgentResult",
    "AgentSessionStarted",
    "AgentText",
    "AgentTimeout",
    "AgentToolCall",
    "AgentToolResult",
    "AgentTurnEnded",
    "AgentUsageUpdate",
    "AuthFailed",
    "BinaryMissing",
    "Capabilities",
    "Capability",
    "Claims",
    "CliAdapter",
    "CliStream",
    "ContextExhausted",
    "ContractContext",
    "ContractResult",
    "ContractSettings",
    "ContractType",
    "Dispatch",
    "Launch",
    "LintScope",
    "MemoryDatabase",
    "MemoryStore",
    "Notify",
    "OutputStore",
    "PageSource",
    "PathEscape",
    "Problem",
    "ProcessResult",
    "Progress",
    "RateLimited",
    "ReviewFeedback",
    "ReviewIssue",
    "RunReader",
    "RunState",
    "RunWriter",
    "StatsReader",
    "Step",
    "StepKind",
    "StepResult",
    "Store",
    "StoreError",
    "SwellError",
    "ThreadReader",
    "Unenforced",
    "UnparseableOutput",
    "Usage",
    "VisitContext",
    "inside",
    "output_namespace",
    "render_text",
]
