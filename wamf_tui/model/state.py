"""The session's answers: the benchmark's changes, the checkpoint rows, and `InitState`, everything the flow
knows."""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from ..infra.records import Record
from .analysis import Analysis
from .detected import Detected, LaunchCommand
from .kinds import PathText, Register, Step
from .trial import TrialResult


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
    folder: bool = False  # runs the job from the benchmark folder (`cd` there, its files by a path back)
    links: list[str] = []  # what it reads by a relative path, linked from the checkout into that folder
    # what the trial holds it to (`proof`), never read from `what`: the effect, its facts' file:line, whether
    # `how` takes them out of the run, the step cap it sets
    kind: Literal["steps", "save", "tracker", "upload", "eval"] | None = None
    sites: list[str] = []
    off: bool = False
    cap: int | None = None
    seen: bool = False  # offered by a trial that saw the effect run (`proof.offers`): kept when the table is re-planned



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

    def kept(self, kind: str) -> list[str]:
        """The lines of a `kind` of effect (save, tracker, ...) that a row taken from a trial's offer says stay on."""
        return [site for c in self.changes if c.seen and c.enabled and c.kind == kind for site in c.sites]

    @classmethod
    def from_json(cls, text: str) -> InitState:
        return cls.model_validate_json(text)
