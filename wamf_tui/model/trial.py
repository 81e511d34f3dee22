"""What a trial of the run line saw (`bench/`): the probe's effects, each claim of the contract held against
them, and the measured result."""

from __future__ import annotations

from typing import Literal

from ..infra.records import Record
from ..infra.visible import RepoText

Ended = Literal["exited", "limit", "stopped", "not started"]
OffKind = Literal["save", "tracker", "upload", "eval"]  # what a contract may claim off, and a trial see run
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
    kind: OffKind | Literal[""] = ""  # an effect claimed off that the trial saw at `where`


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
