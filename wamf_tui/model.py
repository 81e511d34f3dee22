"""The single source of truth of an init session.

`InitState` holds what was detected, what the analysis found and every answer
the user gave. Screens read and update it, panes redraw from it, and it
round-trips through JSON so a session survives a dropped SSH connection.
"""

from __future__ import annotations

import os
from dataclasses import field
from enum import IntEnum
from typing import Annotated, Literal, cast

from .infra.records import Before, Dump, Record
from .infra.visible import RepoText

# The config system an entry's own parse call uses: `read/systems/` has one module per kind.
Kind = Literal["unknown", "constants", "argparse", "configurator", "hf", "hf_trainer", "fire", "hydra",
               "omegaconf", "omegaconf_cli", "omegaconf_dotlist", "omegaconf_loader", "tyro", "jsonargparse",
               "lightning_cli", "click", "typer", "absl", "yacs", "ml_collections", "simple_parsing", "configargparse",
               "argbind", "mmengine", "draccus"]
# Sessions saved before the kinds were typed hold the old labels: read them as their kind, so a resumed
# session keeps its answers (an unknown label reads as "unknown", and the job is read again anyway).
_OLD_LABELS = {"HfArgumentParser": "hf", "HfArgumentParser (TrainingArguments)": "hf_trainer",
               "jsonargparse CLI": "jsonargparse", "LightningCLI": "lightning_cli"}


def _kind(value: object) -> object:
    if isinstance(value, str) and value not in Kind.__args__:  # type: ignore[attr-defined]
        return _OLD_LABELS.get(value, "unknown")
    return value


def as_kind(label: str) -> Kind:
    """A config system's kind from its name or an old label (`jsonargparse CLI`); "unknown" for anything else."""
    return cast(Kind, _kind(label))


_FS = "fs-bytes:"  # a path that is not UTF-8 (a byte from another encoding in a folder name), saved as hex


def _path_to_json(path: str) -> str:
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return _FS + os.fsencode(path).hex()


def _path_from_json(value: object) -> object:
    if isinstance(value, str) and value.startswith(_FS):
        try:
            return os.fsdecode(bytes.fromhex(value[len(_FS):]))
        except ValueError:
            return value
    return value


# A path the app opens (the repo, the contract): kept exact, even when not UTF-8 (Python holds such
# a name with surrogate escapes, which JSON cannot carry), and passed through `visible` to be shown.
PathText = Annotated[str, Before(_path_from_json), Dump(_path_to_json)]

# Mutable defaults are written `[]` / `{}`: a record makes a fresh one for each instance.

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


# --- analysis ---------------------------------------------------------------


class Anchor(Record):
    role: RepoText
    file: RepoText
    line: int
    text: RepoText = ""


GIVEN = "(given)"  # after a store_true flag in `Fact.off_switch`: giving it switches the feature off


class Fact(Record):
    name: RepoText
    file: RepoText
    line: int
    off_switch: RepoText | None = None
    guard: RepoText | None = None  # the condition it runs under, as written (`iter_num % eval_interval == 0`)
    counted: bool = False  # that condition's `x % n == 0` counter is counted up before it: false on the first step
    dead: RepoText | None = None  # why it never runs: a condition the code fixes false (`args.save is False`)
    every: int | None = None  # the interval the code fixes (`step % 1000 == 0`, counted): first at that step
    unset: RepoText | None = None  # a flag its condition needs set (`if args.save_dir:`, default None): off without it
    config_off: RepoText | None = None  # why the YAML file the command names leaves it off ("x is not set in a.yml")
    every_set: RepoText | None = None  # where `every` comes from when a config file sets it ("a.b is 1000 in x.yml")
    folder: RepoText | None = None  # a text flag that names the folder it writes to (`--model-tag`)
    late: RepoText | None = None  # a seed call: where the model is built before it ("qlora.py:704"), unseeded


class Overhead(Record):
    """A setting of the job's config that costs time in every step (DeepSpeed's `wall_clock_breakdown`)."""

    name: RepoText
    file: RepoText
    line: int
    cost: RepoText  # what it does in each step, in a few words


class StepControl(Record):
    """A setting that governs the run's length (`read.lengths`): it bounds it (the count a benchmark caps)
    or scales it (warm-up, accumulation, a token budget, a dry-run mode)."""

    name: RepoText
    file: RepoText
    line: int
    default: RepoText | None = None
    role: Literal["bound", "scale"] = "bound"


class Need(Record):
    """Something the entry needs from its command (see `read.needs`)."""

    code: Literal["ranks", "accelerate", "package", "root_import", "no_main", "submits", "trains_with"]
    file: RepoText
    line: int
    why: RepoText
    runs: RepoText | None = None  # submits: the module that trains (`pkg.train`), run here instead
    runs_from: RepoText = ""  # the folder to run that module from
    drop: list[RepoText] = []  # submits: the submitter's own options (`--nodes`), not the job's
    words: list[RepoText] = []  # trains_with: what the command gives to train (`--train`, `--do_train True`)
    spellings: list[RepoText] = []  # trains_with: the switch's names, any of which the command may give


class ProcessSignal(Record):
    """A line of the job's code that says how its processes start (see `read.launch`)."""

    kind: Literal["rank_env", "process_group", "accelerator", "fabric", "fabric_launch", "deepspeed", "spawn",
                  "lightning", "fewest"]
    file: RepoText
    line: int
    text: RepoText  # the call or read as written, shortened
    guard: RepoText | None = None  # the condition it runs under in its own function, as written; None: always
    commented: bool = False  # fabric_launch: found only in a comment (`# fabric.launch()`)
    count: int | None = None  # fewest: the fewest processes (one a GPU) the code runs with


class PrecisionSignal(Record):
    """A line of the job's code that sets the precision it computes in (see `read.precision`)."""

    kind: Literal["autocast", "scaler", "framework", "cast"]
    file: RepoText
    line: int
    text: RepoText  # the call as written, shortened
    dtypes: list[Literal["bf16", "fp16", "fp32"]] = []  # what it may run in, as far as the code itself says
    settings: list[RepoText] = []  # the job's settings (or globals) that pick among them (`mixed_precision`)
    enabled: RepoText | None = None  # its `enabled=` argument, when not a literal True
    guard: RepoText | None = None  # the condition it runs under in its function, as written


class Required(Record):
    """An input the job's parser refuses to run without."""

    name: RepoText  # `--dataset_name`, a positional's name, or a Hydra key
    # "output": a folder the job writes to, which the benchmark gives its own run folder
    # "key": the key of a yacs-style `KEY VALUE` opts pair
    # "file": a file the code reads by a fixed relative path (`open('input.txt')`): no setting gives it
    # "env": an environment variable the code takes its data folder from, given as `VAR=path` on the command
    kind: Literal["option", "positional", "field", "hydra", "output", "key", "file", "env"]
    file: RepoText
    line: int
    alternatives: list[RepoText] = []  # other options that give the same input (`--datasets` for `--dataset_name`)


class Span(Record):
    """Lines `start` to `end` of a file, inclusive."""

    file: RepoText
    start: int
    end: int
    loop: int | None = None  # a call of the training function inside a loop (of epochs) starting here


class HydraTree(Record):
    """A Hydra app's primary config as Hydra composes it (defaults lists and groups), unresolved:
    what an override on the run line may name."""

    config: RepoText  # the primary config's file, from the repo root
    composed: bool = False  # False: Hydra could not compose it (the note says why); nothing below is known
    keys: dict[RepoText, RepoText] = {}  # dotted leaf key -> its value as written (`${...}` left as is)
    nodes: list[RepoText] = []  # dotted keys that hold a mapping
    groups: dict[RepoText, list[RepoText]] = {}  # config group -> its options (`callbacks` -> default, none)
    choices: dict[RepoText, RepoText] = {}  # group -> the option the defaults list picks (`null`: none)
    overrides: list[RepoText] = []  # the command's group choices it was composed with (`experiment=x`)
    note: RepoText = ""


class Resolved(Record):
    """A setting's value as the job's own parser resolves it for the command read, and where it came from."""

    value: RepoText | None
    source: RepoText = "default"  # "default", the config file's "path:line", or "command"


class Analysis(Record):
    script: RepoText
    kind: Literal["training", "inference", "unknown"] = "unknown"
    anchors: list[Anchor] = []
    trackers: list[Fact] = []
    checkpoints: list[Fact] = []
    evals: list[Fact] = []
    uploads: list[Fact] = []
    overheads: list[Overhead] = []  # settings that slow every step (DeepSpeed's timers and profilers)
    output_dirs: list[Fact] = []
    seeds: list[Fact] = []
    step_controls: list[StepControl] = []
    loaders: list[Fact] = []
    parallelism: list[Fact] = []
    precision: list[PrecisionSignal] = []  # autocast, scalers, a framework's precision, casts
    flags: dict[RepoText, RepoText | None] = {}
    off_values: dict[RepoText, RepoText] = {}  # flag -> the value its help text says switches it off (`-1`)
    # flag -> file:line of each call that declares it: one declared only in functions the job never reaches
    # (another tool's options in a shared module) is not the job's (`reach.drop_unreached`)
    flag_sites: dict[RepoText, list[RepoText]] = {}
    dashes_stripped: bool = False  # its dot-list words pass a function that strips dashes: `--k=v` is `k=v`
    # setting -> the settings the code asserts are unset when it is set (`if args.train_iters: assert
    # args.train_samples is None`): a run line that sets the one must not give the others
    exclusive: dict[RepoText, list[RepoText]] = {}
    fixed_seed: RepoText | None = None  # where the job seeds torch with a constant, unconditionally (file:line)
    needs: list[Need] = []
    processes: list[ProcessSignal] = []  # how the code reached starts its processes
    required: list[Required] = []
    logged: list[RepoText] = []  # metric names the job logs (wandb.log keys, add_scalar tags, self.log names)
    module_globals: list[RepoText] = []  # the entry's module-level names: what an exec-style configurator sets
    parser_open: RepoText | None = None  # why its argparse flags cannot all be known (parse_known_args, ...)
    modelled: list[RepoText] = []  # flags a model of its config proves beyond its parser's (tyro's classes)
    module: RepoText | None = None  # the entry as a module (`pkg.train`), when it sits in a package
    module_root: RepoText = ""  # the folder `python -m` runs it from
    config_system: Annotated[Kind, Before(_kind)] = "unknown"
    # setting -> its value: defaults, then the config file the command names, then the command (`read.values`)
    resolved: dict[RepoText, Resolved] = {}
    fetched: list[RepoText] = []  # input settings whose data the job downloads when missing (`download=True`)
    hydra: HydraTree | None = None  # a Hydra app's composed config
    train_loop: Span | None = None  # the outermost loop around the training step, in its function
    train_scope: Span | None = None  # that function (or the whole module)
    train_inner: Span | None = None  # the loop inside it that holds the step (batches, in a loop of epochs)
    loop_reads: list[RepoText] = []  # the names the training loop's header reads (`num_iterations` of `range(...)`)
    computed: list[RepoText] = []  # settings the job assigns itself before training: a value given is overwritten
    train_calls: list[Span] = []  # each call of that function, to the end of the caller: what follows runs after
    files: list[RepoText] = []
    digests: dict[RepoText, str] = {}  # file -> digest of the bytes read: a resumed session sees what changed
    partial: bool = False
    notes: list[RepoText] = []


class BenchmarkChange(Record):
    what: str
    how: str  # the flag or environment variable, as the user reads it
    why: str
    flags: list[str] = []  # what it adds to the run line
    env: list[str] = []
    drop: list[str] = []  # flags of the original launch command it removes
    enabled: bool = True
    exclusion: str | None = None  # what the contract records when it is switched off
    unproven: list[str] = []  # flags it needs that the job's parser is not proven to take: not added, asked
    # what the trial holds it to (`proof`), never read from `what`: the effect, its facts' file:line, whether
    # `how` takes them out of the run, the step cap it sets
    kind: Literal["steps", "save", "tracker", "upload", "eval"] | None = None
    sites: list[str] = []
    off: bool = False
    cap: int | None = None


Ended = Literal["exited", "limit", "stopped", "not started"]
EffectKind = Literal["save", "tracker", "upload", "eval", "autocast", "params", "write", "line", "parsed"]


class Effect(Record):
    """What the trial's probe saw the job do (`step_probe`), at the job's own `file:line`."""

    kind: EffectKind
    what: RepoText  # torch.save, wandb, eval, bfloat16, a row's file:line, ...
    where: RepoText = ""  # the job's file:line that did it ("" when no frame of the repo led there)
    stack: list[RepoText] = []  # the job's frames that led there, innermost first (`where` is the first)
    step: int = 0  # optimizer steps done before it, in its process
    path: RepoText = ""  # what a save, tracker or write wrote to
    mode: RepoText = ""  # a tracker's mode (wandb's `disabled`), an autocast's device
    count: int = 1  # times seen with the same what, where, path and mode
    values: dict[RepoText, RepoText] = {}  # parsed: each setting the job's parser made of the command line
    extras: list[RepoText] = []  # parsed: what parse_known_args left over


class Claim(Record):
    """One claim of the contract, checked against what the trial saw (`proof`)."""

    claim: str  # "cap 30 steps", "saves off", "row loss"
    expected: str
    observed: str
    ok: bool
    where: RepoText = ""  # the job's file:line that disproves it
    fix: str = ""  # what to change when it failed
    row: RepoText = ""  # the contract row it checks: a change's `what` or a checkpoint's name


class TrialResult(Record):
    """A trial of the benchmark command the user asked for (`wamf_tui.bench.trial`)."""

    command_hash: str  # of the activate and run lines it ran: stale once either changes
    started: str
    ended: Ended
    exit_status: int | None = None
    wall_s: float = 0.0
    first_output_s: float | None = None
    steps: int = 0  # outermost optimizer steps seen
    step_times: list[float] = []  # seconds, from the second step on (the last 1000)
    warmup: int | None = None
    steady_s: float | None = None  # median step time after the warm-up
    peak_host_mib: int | None = None
    peak_gpu_mib: int | None = None
    peak_gpu_by_device: dict[str, int] = {}  # GPU index -> its peak growth, MiB
    gpu_util: int | None = None
    throughput: RepoText = ""  # the last samples/s or tokens/s the job printed, as it printed it
    touched: list[RepoText] = []  # files it created or changed in the checkout
    tail: list[RepoText] = []  # its last lines of output
    cause: RepoText = ""
    log: str = ""
    effects: list[Effect] = []  # what the probe saw (the first 300)
    claims: list[Claim] = []  # the contract's claims, checked


# --- answers ----------------------------------------------------------------


class Checkpoint(Record):
    name: str
    where: str
    site: str = ""  # the file:line `where` names ("" for a generic row): the line the trial traces
    what: str
    steps: str
    tolerance: str
    enabled: bool = True


class InitState(Record, frozen=True):
    """Everything the flow knows. Saved after every answer. Frozen: `flow` makes each new state from the
    last (`model_copy`), so a saved or shown state never changes under its reader."""

    version: int = 1
    step: Step = Step.READER
    at: str = ""  # key of the current question inside the step; "" is its first (a key, not an index:
    # new facts add and drop questions, and the user keeps their place)
    repo_path: PathText = ""
    contract_path: PathText = ""
    template_path: PathText | None = None

    reader: str = ""
    reader_register: Register = "algo"

    repo: str = ""
    activate: str = ""
    command: str = ""  # the command that runs the job today
    launch: LaunchCommand | None = None  # that command, read
    script: str = ""  # its entry's file, from the repo root
    reading: bool = False  # the script is being read: the questions that depend on it wait
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

    trial: TrialResult | None = None  # the latest trial run the user asked for
    answered: list[str] = []  # question keys answered so far
    written: str | None = None  # path of the contract once written

    detected: Detected = field(default_factory=Detected)
    analysis: Analysis | None = None

    def to_json(self) -> str:
        return self.model_dump_json(indent=1)

    @classmethod
    def from_json(cls, text: str) -> InitState:
        return cls.model_validate_json(text)
