"""What reading the job's code found (`read/`): its step, its effects and their switches, its settings and
their resolved values, what its command must give."""

from __future__ import annotations

from typing import Annotated, Literal

from ..infra.records import Before, Record
from ..infra.visible import RepoText
from .kinds import Kind, known_kind


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
    epoch_end: bool = False  # a framework runs it at each training epoch's end (Lightning's default ModelCheckpoint)
    prefix: bool = False  # an output setting that starts the relative paths it writes (`f'{args.name}_state.json'`)


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
    # "template": a config file the command names whose values are placeholders (`$replace_this_with_...`):
    # `name` its keys, `file` the config, which the user replaces by a filled one of their own
    kind: Literal["option", "positional", "field", "hydra", "output", "key", "file", "env", "template"]
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
    cwd_reads: list[Fact] = []  # paths the code reads relative to the folder it runs in (`open('input.txt')`)
    # where the code reads the Trainer's checkpoint callback (`trainer.checkpoint_callback.best_model_path`):
    # with no ModelCheckpoint left that is None, and the read fails
    checkpoint_read: RepoText | None = None
    checkpoint_read_if: list[RepoText] = []  # the settings the `if`s around that read test (`cfg.get("test")`)
    # the entry's HfArgumentParser reads flags only (`parse_args_into_dataclasses()`, no file parse, no leftovers
    # kept): a positional word (`train.py config.yaml`) is one it refuses
    flags_only: bool = False
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
    # conditions its config raises on at start (a dataclass `__post_init__`'s `if self.a and not self.b: raise`),
    # each as a test of its settings (`args.a and not args.b`): a run line whose values make one true crashes
    raises: list[Fact] = []
    logged: list[RepoText] = []  # metric names the job logs (wandb.log keys, add_scalar tags, self.log names)
    module_globals: list[RepoText] = []  # the entry's module-level names: what an exec-style configurator sets
    parser_open: RepoText | None = None  # why its argparse flags cannot all be known (parse_known_args, ...)
    modelled: list[RepoText] = []  # flags a model of its config proves beyond its parser's (tyro's classes)
    module: RepoText | None = None  # the entry as a module (`pkg.train`), when it sits in a package
    module_root: RepoText = ""  # the folder `python -m` runs it from
    config_system: Annotated[Kind, Before(known_kind)] = "unknown"
    # setting -> its value: defaults, then the config file the command names, then the command (`read.values`)
    resolved: dict[RepoText, Resolved] = {}
    fetched: list[RepoText] = []  # input settings whose data the job downloads when missing (`download=True`)
    hydra: HydraTree | None = None  # a Hydra app's composed config
    train_loop: Span | None = None  # the outermost loop around the training step, in its function
    train_scope: Span | None = None  # that function (or the whole module)
    train_inner: Span | None = None  # the loop inside it that holds the step (batches, in a loop of epochs)
    loop_reads: list[RepoText] = []  # the names the training loop's header reads (`num_iterations` of `range(...)`)
    computed: list[RepoText] = []  # settings the job assigns itself before training: a value given is overwritten
    # the local a test at the top of the training loop breaks on, which the job computes before the loop from
    # other values (litgpt's `if iter_num >= max_iters: break`, `max_iters = max_tokens // tokens_per_iter`)
    loop_bound_local: RepoText = ""
    train_calls: list[Span] = []  # each call of that function, to the end of the caller: what follows runs after
    files: list[RepoText] = []
    digests: dict[RepoText, str] = {}  # file -> digest of the bytes read: a resumed session sees what changed
    partial: bool = False
    notes: list[RepoText] = []
