"""What detection found: the checkout, the environment, the GPUs, the job's commands and scripts."""

from __future__ import annotations

from ..infra.records import Record
from ..infra.visible import RepoText


class RepoFacts(Record):
    path: RepoText
    is_git: bool = False
    root: RepoText | None = None
    branch: RepoText | None = None
    detached: bool = False
    sha: RepoText | None = None
    subject: RepoText | None = None
    no_commits: bool = False
    bare: bool = False
    upstream: RepoText | None = None
    remote_url: RepoText | None = None
    modified: list[RepoText] = []
    staged: list[RepoText] = []
    untracked: list[RepoText] = []
    submodules: list[RepoText] = []
    operation: RepoText | None = None
    worktrees: list[RepoText] = []
    error: RepoText | None = None

    @property
    def dirty(self) -> bool:
        return bool(self.modified or self.staged or self.untracked)


class PackageVersion(Record):
    name: RepoText
    version: RepoText


class EnvFacts(Record):
    kind: RepoText = "none"  # venv, conda, uv, poetry, pixi, conda-file, modules, system, none
    name: RepoText | None = None
    activate: RepoText | None = None
    python: RepoText | None = None  # interpreter path
    python_version: RepoText | None = None
    torch: RepoText | None = None
    torch_cuda: RepoText | None = None
    packages: list[PackageVersion] = []
    notes: list[RepoText] = []
    error: RepoText | None = None


class GpuProcess(Record):
    pid: int
    user: RepoText | None = None
    command: RepoText | None = None
    memory_mib: int | None = None


class GpuFacts(Record):
    index: int
    name: RepoText
    memory_used_mib: int
    memory_total_mib: int
    utilization: int | None = None
    mig: bool = False
    processes: list[GpuProcess] = []

    @property
    def free(self) -> bool:
        return not self.processes and self.memory_used_mib < 1024 and (self.utilization or 0) < 5


class HardwareFacts(Record):
    host: RepoText
    nvml: bool = False
    nvml_error: RepoText | None = None
    driver: RepoText | None = None
    cuda_driver: RepoText | None = None
    gpus: list[GpuFacts] = []
    cpu_cores: int | None = None
    ram_gib: float | None = None
    load: float | None = None
    slurm: dict[RepoText, RepoText] = {}


class LaunchCommand(Record):
    """A command that starts the job, as found in the repo (or typed by the user)."""

    command: RepoText  # as typed from the repo root: `cd DIR && VAR=1 launcher opts entry args`
    launcher: RepoText  # python, python -m, torchrun, accelerate launch, deepspeed, srun ..., console script
    script: RepoText | None = None  # the script word as written
    module: RepoText | None = None  # python -m / torchrun -m
    entry: RepoText | None = None  # a console script's module:function
    function: RepoText | None = None  # the function of `path` its dispatcher's CLI makes the flags from (`setup`)
    function_cli: RepoText = ""  # that CLI: `jsonargparse CLI` or `fire`
    path: RepoText | None = None  # the entry's file, from the repo root
    cwd: RepoText = ""  # the folder the command runs in, from the repo root
    env: list[RepoText] = []  # VAR=value words before the launcher
    prefix: list[RepoText] = []  # the launcher and its own options
    args: list[RepoText] = []
    nproc_per_node: int | None = None
    nnodes: int | None = None
    unresolved: list[RepoText] = []  # shell variables it uses that the file never sets
    left_out: list[RepoText] = []  # the entry's options whose value was left to the reader: `--model <your_path>`
    absent: list[RepoText] = []  # config files it names that the repo lacks: an example of another project's
    other_machine: RepoText = ""  # the doc heading over it when that names another machine (`To run on Mac`)
    folded: bool = False  # inside a doc's `<details>` block: a variant the page folds away, not its main command
    source: RepoText = ""  # file:line it was found at


class ScriptCandidate(Record):
    path: RepoText
    score: int
    reasons: list[RepoText] = []
    launch: LaunchCommand | None = None


class ScriptScan(Record):
    candidates: list[ScriptCandidate] = []
    launches: list[LaunchCommand] = []
    consoles: dict[RepoText, RepoText] = {}  # the repo's console scripts: name -> module:function
    files_seen: int = 0
    folders: list[RepoText] = []  # top-level folders, for the hands-off picker
    stopped_early: RepoText | None = None


class Detected(Record):
    repo: RepoFacts | None = None
    env: EnvFacts | None = None
    hardware: HardwareFacts | None = None
    scripts: ScriptScan | None = None
    recorder: RepoText | None = None  # a recorder the repo already has, with how it is switched on
    tests: RepoText | None = None  # the repo's own test command
