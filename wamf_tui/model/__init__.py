"""The single source of truth of an init session.

`InitState` holds what was detected, what the analysis found and every answer
the user gave. Screens read and update it, panes redraw from it, and it
round-trips through JSON so a session survives a dropped SSH connection. Its
records live by what they hold: `kinds` (names every record shares), `detected`,
`analysis`, `trial` and `state` (the answers); every name is imported from here.
"""

from .analysis import (
    GIVEN,
    Analysis,
    Anchor,
    Fact,
    HydraTree,
    Need,
    Overhead,
    PrecisionSignal,
    ProcessSignal,
    Required,
    Resolved,
    Span,
    StepControl,
)
from .detected import (
    Detected,
    EnvFacts,
    GpuFacts,
    GpuProcess,
    HardwareFacts,
    LaunchCommand,
    PackageVersion,
    RepoFacts,
    ScriptCandidate,
    ScriptScan,
)
from .kinds import (
    ALLOWED_CHANGES,
    HINTS,
    STEP_TITLES,
    Kind,
    PathText,
    Register,
    Step,
    as_kind,
)
from .state import (
    BenchmarkChange,
    Checkpoint,
    InitState,
)
from .trial import (
    Claim,
    Effect,
    EffectKind,
    Ended,
    OffKind,
    TrialResult,
)

__all__ = [
    "Kind",
    "as_kind",
    "PathText",
    "Register",
    "Step",
    "STEP_TITLES",
    "ALLOWED_CHANGES",
    "HINTS",
    "RepoFacts",
    "PackageVersion",
    "EnvFacts",
    "GpuProcess",
    "GpuFacts",
    "HardwareFacts",
    "LaunchCommand",
    "ScriptCandidate",
    "ScriptScan",
    "Detected",
    "Anchor",
    "GIVEN",
    "Fact",
    "Overhead",
    "StepControl",
    "Need",
    "ProcessSignal",
    "PrecisionSignal",
    "Required",
    "Span",
    "HydraTree",
    "Resolved",
    "Analysis",
    "Ended",
    "EffectKind",
    "OffKind",
    "Effect",
    "Claim",
    "TrialResult",
    "BenchmarkChange",
    "Checkpoint",
    "InitState",
]
