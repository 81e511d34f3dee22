"""The single source of truth of an init session.

`InitState` holds what was detected, what the analysis found and every answer
the user gave. Screens read and update it, panes redraw from it, and it
round-trips through JSON so a session survives a dropped SSH connection.
"""

from __future__ import annotations

import os
from enum import IntEnum
from typing import Literal

# We use no pydantic plugins; without this, the first model class makes pydantic read the
# entry points of every installed distribution, which takes long in a venv holding torch.
os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")

from pydantic import BaseModel, Field  # noqa: E402

# Mutable defaults are written `[]` / `{}`: pydantic copies them for each instance, and a
# `default_factory=list` would make it parse `list`'s text signature for every field at import.

Register = Literal["mlsys", "algo"]


class Step(IntEnum):
    READER = 0
    JOB = 1
    CHECKS = 2
    RULES = 3
    CONFIRM = 4


STEP_TITLES = {
    Step.READER: "Reader",
    Step.JOB: "Job",
    Step.CHECKS: "Checks",
    Step.RULES: "Rules",
    Step.CONFIRM: "Confirm",
}

ALLOWED_CHANGES = (
    "system configs",
    "enabling existing acceleration features with small code edits",
    "installing faster backends",
    "changing Python-level workflow code",
    "modifying Triton/CUDA kernels",
)

HINTS = ("slow start-up", "slow steady step", "memory", "not sure")


# --- detected facts -------------------------------------------------------


class RepoFacts(BaseModel):
    path: str
    is_git: bool = False
    root: str | None = None
    branch: str | None = None
    detached: bool = False
    sha: str | None = None
    subject: str | None = None
    no_commits: bool = False
    bare: bool = False
    upstream: str | None = None
    remote_url: str | None = None
    modified: list[str] = []
    staged: list[str] = []
    untracked: list[str] = []
    submodules: list[str] = []
    operation: str | None = None
    worktrees: list[str] = []
    error: str | None = None

    @property
    def dirty(self) -> bool:
        return bool(self.modified or self.staged or self.untracked)


class PackageVersion(BaseModel):
    name: str
    version: str


class EnvFacts(BaseModel):
    kind: str = "none"  # venv, conda, uv, poetry, pixi, conda-file, modules, system, none
    name: str | None = None
    activate: str | None = None
    python: str | None = None  # interpreter path
    python_version: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None
    packages: list[PackageVersion] = []
    notes: list[str] = []
    error: str | None = None


class GpuProcess(BaseModel):
    pid: int
    user: str | None = None
    command: str | None = None
    memory_mib: int | None = None


class GpuFacts(BaseModel):
    index: int
    name: str
    memory_used_mib: int
    memory_total_mib: int
    utilization: int | None = None
    mig: bool = False
    processes: list[GpuProcess] = []

    @property
    def free(self) -> bool:
        return not self.processes and self.memory_used_mib < 1024 and (self.utilization or 0) < 5


class HardwareFacts(BaseModel):
    host: str
    nvml: bool = False
    nvml_error: str | None = None
    driver: str | None = None
    cuda_driver: str | None = None
    gpus: list[GpuFacts] = []
    cpu_cores: int | None = None
    ram_gib: float | None = None
    load: float | None = None
    slurm: dict[str, str] = {}


class LaunchCommand(BaseModel):
    command: str
    launcher: str
    script: str | None = None
    args: list[str] = []
    nproc_per_node: int | None = None
    nnodes: int | None = None
    source: str = ""  # file:line it was found at


class ScriptCandidate(BaseModel):
    path: str
    score: int
    reasons: list[str] = []
    launch: LaunchCommand | None = None


class ScriptScan(BaseModel):
    candidates: list[ScriptCandidate] = []
    launches: list[LaunchCommand] = []
    files_seen: int = 0
    folders: list[str] = []  # top-level folders, for the hands-off picker
    stopped_early: str | None = None


class Detected(BaseModel):
    repo: RepoFacts | None = None
    env: EnvFacts | None = None
    hardware: HardwareFacts | None = None
    scripts: ScriptScan | None = None
    recorder: str | None = None  # a recorder the repo already has, with how it is switched on
    tests: str | None = None  # the repo's own test command


# --- analysis ---------------------------------------------------------------


class Anchor(BaseModel):
    role: str
    file: str
    line: int
    text: str = ""


class Fact(BaseModel):
    name: str
    file: str
    line: int
    off_switch: str | None = None


class StepControl(BaseModel):
    name: str
    file: str
    line: int
    default: str | None = None


class Analysis(BaseModel):
    script: str
    kind: Literal["training", "inference", "unknown"] = "unknown"
    anchors: list[Anchor] = []
    trackers: list[Fact] = []
    checkpoints: list[Fact] = []
    evals: list[Fact] = []
    uploads: list[Fact] = []
    output_dirs: list[Fact] = []
    seeds: list[Fact] = []
    step_controls: list[StepControl] = []
    loaders: list[Fact] = []
    parallelism: list[Fact] = []
    precision: list[Fact] = []
    flags: dict[str, str | None] = {}
    config_system: str = "unknown"
    files: list[str] = []
    partial: bool = False
    notes: list[str] = []


class BenchmarkChange(BaseModel):
    what: str
    how: str  # the flag or environment variable, as the user reads it
    why: str
    flags: list[str] = []  # what it adds to the run line
    env: list[str] = []
    drop: list[str] = []  # flags of the original launch command it removes
    enabled: bool = True
    exclusion: str | None = None  # what the contract records when it is switched off


# --- answers ----------------------------------------------------------------


class Checkpoint(BaseModel):
    name: str
    where: str
    what: str
    steps: str
    tolerance: str
    enabled: bool = True


class InitState(BaseModel):
    """Everything the flow knows. Saved after every answer."""

    version: int = 1
    step: Step = Step.READER
    question: int = 0  # index of the current question inside the step
    repo_path: str = ""
    contract_path: str = ""
    template_path: str | None = None

    reader: str = ""
    reader_register: Register = "algo"

    repo: str = ""
    activate: str = ""
    script: str = ""
    run: str = ""
    node: str = ""
    dirty_decision: str = ""
    guarantees: str = ""
    changes: list[BenchmarkChange] = []
    must_not_change: str = ""
    mode: Literal["speed", "accuracy"] = "speed"  # accuracy: deterministic algorithms on, bit-exact checks

    checks: list[Checkpoint] = []
    extra_checks: str = ""
    recorder: str = ""

    allowed_changes: list[str] = []
    own_tests: str = ""
    hands_off: str = ""
    memory_trade: str = ""
    when_to_stop: str = ""
    hints: list[str] = []
    anything_else: str = ""

    answered: list[str] = []  # question keys answered so far
    written: str | None = None  # path of the contract once written

    detected: Detected = Field(default_factory=Detected)
    analysis: Analysis | None = None

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)

    @classmethod
    def from_json(cls, text: str) -> InitState:
        return cls.model_validate_json(text)
