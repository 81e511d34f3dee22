"""What the app proposes for each answer, derived from detected facts and the analysis.

Pure functions of `InitState`: no I/O, so proposals are instant and testable.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from ..detect.launch import linked, parse_launch
from ..model import Analysis, Anchor, BenchmarkChange, Checkpoint, InitState, LaunchCommand, Register, RepoFacts
from ..read.needs import missing_inputs, passes_local_rank, say_missing
from ..read.precision import job_precision
from ..read.subcommands import reader, refine_console
from .benchmark import propose
from .cap import DEFAULT_STEPS
from .run_line import entry_fixes, job_args, job_launch, run_command

PARITY = (
    "parity (record: PARITY=1 PARITY_OUT=records.jsonl; compare: parity compare; "
    "tolerance: parity derive over three runs of unmodified code)"
)


def repo_line(state: InitState) -> str:
    repo = state.detected.repo
    if repo is None:
        return state.repo_path
    root = repo.root or repo.path
    if not repo.is_git:
        return f"{root} (not a git repository)"
    if repo.no_commits:
        return f"{root} ({repo.branch or 'no branch'}, no commits yet)"
    at = f" @ {repo.sha}" if repo.sha else f", commit unreadable: {repo.error or 'git gave no commit'}"
    where = f"detached HEAD{at}" if repo.detached else f"{repo.branch}{at}"
    return f"{root} ({where})"


def dirty_summary(repo: RepoFacts | None) -> str:
    if repo is None:
        return ""
    parts = [
        f"{len(files)} {label}"
        for files, label in ((repo.modified, "modified"), (repo.staged, "staged"), (repo.untracked, "untracked"))
        if files
    ]
    return ", ".join(parts)


def activate_line(state: InitState) -> str:
    env = state.detected.env
    return (env.activate or "") if env else ""


def candidate_commands(state: InitState) -> list[tuple[str, str]]:
    """(command, why) for every candidate, best first: the command the repo launches it with, else
    `python PATH` (or its console script)."""
    scan = state.detected.scripts
    out: list[tuple[str, str]] = []
    for c in scan.candidates if scan else []:
        cmd = c.launch.command if c.launch else f"python {shlex.quote(c.path)}"
        why = ", ".join(c.reasons[:3])
        if c.launch and c.launch.unresolved:
            left = ", ".join(u if u.startswith("<") else f"${u}" for u in c.launch.unresolved)
            why += f"; {c.launch.source} leaves {left} to you: add what it holds"
        out.append((cmd, why))
    return out


def command_default(state: InitState) -> str:
    if state.command:
        return state.command
    if state.script:  # an answers file or an older session named only the script
        return next((cmd for cmd, _ in candidate_commands(state) if _entry(state, cmd) == state.script),
                    f"python {shlex.quote(state.script)}")
    commands = candidate_commands(state)
    return commands[0][0] if commands else ""


def _entry(state: InitState, command: str) -> str | None:
    scan = state.detected.scripts
    return next((c.path for c in scan.candidates if c.launch and c.launch.command == command), None) if scan else None


def read_command(state: InitState, command: str) -> LaunchCommand | None:
    """The typed or picked command, read; None when it starts no Python entry found in the repo."""
    scan = state.detected.scripts
    for c in scan.candidates if scan else []:
        if c.launch and c.launch.command == command:
            return c.launch
    root = Path(state.repo_path)
    found = {c.path for c in scan.candidates} if scan else set()
    exists = lambda p: p in found or (root / p).is_file()  # noqa: E731 (detection saw the candidates)
    launch = parse_launch(command, "your answer", "", {}, scan.consoles if scan else {}, exists)
    if launch is None and command.strip().endswith(".py"):  # a bare script path: run with python
        launch = parse_launch(f"python {command.strip()}", "your answer", "", {}, {}, exists)
    if launch is None or not launch.path:
        return None
    refine_console(launch, reader(root), exists, found)
    return launch


def known_problems(state: InitState) -> list[str]:
    """What detection knows is wrong with running the job here, for the guarantee question."""
    problems: list[str] = []
    env, hw = state.detected.env, state.detected.hardware
    if env is not None and env.error:
        problems.append(env.error)
    elif env is not None and not env.torch:
        problems.append(f"torch is not installed in {env.name or env.kind}")
    if hw is not None and not hw.gpus:
        problems.append(hw.nvml_error or "no NVIDIA GPU visible")
    elif hw is not None:
        for g in hw.gpus:
            if not g.free:
                who = ", ".join(f"{p.user or 'unknown'} pid {p.pid}" for p in g.processes) or "memory in use"
                problems.append(f"GPU {g.index} busy ({who})")
    return problems


def output_switch(state: InitState) -> str:
    """The job's own switch for where it writes (`--out_dir=...`), when the reading found one."""
    a = state.analysis
    return next((f.off_switch for f in a.output_dirs if f.off_switch), "") if a is not None else ""


def warmup_note(state: InitState) -> str:
    """What a trial measured, for the step count: how many of the steps are warm-up."""
    t = state.trial
    if t is None or t.warmup is None:
        return ""
    note = f" The trial's warm-up took {t.warmup} step{'s' if t.warmup != 1 else ''}"
    steps = step_count(state)
    if steps.isdigit():
        note += f": {steps} leaves {max(0, int(steps) - t.warmup)} steady"
    return note + "."


def run_notes(state: InitState) -> str:
    """What the run question says beyond its prompt: launcher fixes, required inputs still missing."""
    notes = list(entry_fixes(state))
    a = state.analysis
    run = state.run or run_line(state)
    if a is not None:
        if any(n.code == "no_main" for n in a.needs) and job_launch(state).launcher != "console script":
            notes.append(f"{Path(a.script).name} has no __main__ and calls nothing: name the command that calls it")
        missing = missing_inputs(a.required, job_args(run) or [], store_true(a), _rank_given(run),
                                 *_runs_in(state, run))
        if missing:
            notes.append("it requires " + say_missing(missing, _holes(state)))
        if a.parser_open:  # the reading cannot know every flag: the job's own parser can, in seconds
            notes.append(f"not every flag can be read from the code ({a.parser_open}): `wamf-tui try --parse-only` "
                         "runs the job only until its parser returns, and says which flags it refuses")
    doubtful = unproven(state)
    if doubtful:
        notes.append("not proven to be flags of its parser, so not added: " + ", ".join(doubtful))
    left = [x for x in (state.launch.left_out if state.launch else []) if x.split(" ")[0] not in
            {w.split("=")[0] for w in job_args(run) or []}]
    if left:
        notes.append("add your value for " + ", ".join(left))
    return "".join(f" {n}." for n in notes)


def unproven(state: InitState) -> list[str]:
    """Flags the benchmark needs that the job's parser is not proven to take: left out of the run line, for
    the user to add if the job takes them (with `--yes`, a refusal that names them)."""
    return list(dict.fromkeys(w.split("=")[0] for c in state.changes for w in c.unproven))


def store_true(a: Analysis) -> set[str]:
    return {name for name, default in a.flags.items() if default == "False"}


def step_count(state: InitState) -> str:
    """The steps question's default: the number in the table's first row, or `all` for the whole job."""
    first = state.changes[0] if state.changes else None
    if first is not None and first.what.startswith("whole job"):
        return "all"
    words = (first.flags + first.env) if first else []
    return next((w.split("=")[1] for w in words if "=" in w), str(DEFAULT_STEPS))


def plan(state: InitState, steps: int | None) -> list[BenchmarkChange]:
    """The table re-proposed for `steps` (None: the whole job) and the state's mode, keeping the user's toggles."""
    if state.analysis is None:
        return state.changes
    enabled = {c.what.split(" (")[0]: c.enabled for c in state.changes}
    return [c.model_copy(update={"enabled": enabled.get(c.what.split(" (")[0], True)})
            for c in propose(state.analysis, steps, state.mode, job_launch(state).args)] + [
        c for c in state.changes if c.seen]  # what a trial saw run stays in the table


def must_not_change(state: InitState) -> str:
    a = state.analysis
    fixed = "model size, batch size, sequence length, precision, parallelism and world size"
    if a is None:
        return fixed
    shape_flags = [f for f in a.flags if any(k in f for k in ("batch", "seq", "block", "len", "dim", "layer",
                                                               "head", "dtype", "precision"))]
    return fixed + (f" (flags: {', '.join(shape_flags[:6])} keep their values)" if shape_flags else "")


def run_line(state: InitState) -> str:
    if state.analysis is not None:
        return run_command(state)
    return state.command or command_default(state)


def node_line(state: InitState) -> str:
    hw = state.detected.hardware
    if hw is None:
        return ""
    if not hw.gpus:
        return f"{hw.host} (no NVIDIA GPU visible when checked)"
    names = sorted({g.name for g in hw.gpus})
    total = round(hw.gpus[0].memory_total_mib / 1024)
    busy = [g for g in hw.gpus if not g.free]
    head = f"{hw.host}, {len(hw.gpus)}x {'/'.join(names)} {total}G"
    if not busy:
        return f"{head}, all free when checked"
    users = sorted({p.user or "unknown" for g in busy for p in g.processes}) or ["unknown"]
    idx = ",".join(str(g.index) for g in busy)
    return f"{head}, GPU {idx} busy when checked (held by {', '.join(users)})"


def guarantee_items(state: InitState, register: Register) -> list[str]:
    checked = []
    env = state.detected.env
    hw = state.detected.hardware
    if env is not None and env.python_version:
        checked.append(f"python {env.python_version}" + (f", torch {env.torch}" if env.torch else ""))
    if hw is not None and hw.gpus:
        checked.append(f"{len(hw.gpus)} GPU(s) read via NVML")
    run = state.run or "the run line"
    node = (state.node or "the node").split(",")[0].split(" (")[0]
    if register == "mlsys":
        items = [f"`{run}` runs in this env", f"{node}'s GPUs are idle during runs"]
    else:
        items = [f"`{run}` runs in this environment", f"nobody else uses the GPUs on {node} during the runs"]
    if checked:
        items.append("checked here: " + ", ".join(checked))
    return items


def _anchor(state: InitState, role: str) -> Anchor | None:
    if state.analysis is None:
        return None
    return next((a for a in state.analysis.anchors if a.role == role), None)


def precision(state: InitState) -> tuple[str, str]:
    """(bf16 | fp16 | fp32, where it was read): see `read.precision`; a 16-bit precision the code runs only
    under a condition the reading cannot resolve counts (its tolerance is the one that does not fail)."""
    p = job_precision(state.analysis, _words(state.run) + _words(state.command))
    if p.how == "possible":
        return p.dtype, f"{p.where}, when {p.condition}"
    return p.dtype, p.where


def _words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def checkpoints(state: InitState) -> list[Checkpoint]:
    """Correctness checkpoints at the training step's anchors (found from data flow, see `read.step`);
    generic ones without an analysis. Tolerances follow the job's precision, and say why."""
    dtype, read_at = precision(state)
    low = dtype in ("bf16", "fp16")
    tight, loose = ("rtol 1e-2", "rtol 5e-2") if low else ("rtol 1e-5", "rtol 1e-3")
    why = f" ({dtype}, {read_at})" if low else ""
    exact = state.mode == "accuracy"
    if exact:
        tight = loose = "bit-exact"
        why = ""
    inference = state.analysis is not None and state.analysis.kind == "inference"

    def where(role: str, fallback: str) -> str:
        a = _anchor(state, role)
        if a is None:
            return fallback
        return f"{a.file}:{a.line}" + (f" via {a.text}" if "hook" in a.text or "Callback" in a.text else "")

    def site(*roles: str) -> str:
        """The file:line of the first role found: the line a trial traces for the row."""
        return next((f"{a.file}:{a.line}" for r in roles if (a := _anchor(state, r)) is not None), "")

    if inference:
        return [
            Checkpoint(name="outputs", where=where("forward", "the generate / forward call"), site=site("forward"),
                       what="generated tokens or output summary (mean |x|, shape, dtype)", steps="every batch",
                       tolerance="exact tokens" if not low else "exact tokens; logits rtol 1e-2"),
            Checkpoint(name="inputs", where=where("batch", where("forward", "the generate / forward call")),
                       site=site("batch", "forward"),
                       what="batch shapes and dtypes", steps="first 3 batches", tolerance="exact"),
        ]
    checks = [
        Checkpoint(name="loss", where=where("loss", "where the loss is computed"), site=site("loss"), what="loss value",
                   steps="every step", tolerance=(tight if exact else f"{tight} steps 1-5, {loose} after") + why),
    ]
    clip = _anchor(state, "grad_clip")
    if clip is not None and _off_by_default(state.analysis, clip.text):
        clip = None  # the clip never runs unless asked for: the norm is computed at the step instead
    if clip is not None:
        what = "total gradient norm" + (" (the value the clip call returns)" if "clip" in clip.text else "")
        checks.append(Checkpoint(name="grad norm", where=where("grad_clip", ""), site=site("grad_clip"), what=what,
                                 steps="every step",
                                 tolerance=loose + why))
    elif (opt := _anchor(state, "optimizer_step")) is not None:  # no clipping: a norm computed just before the step
        checks.append(Checkpoint(name="grad norm", where=f"{opt.file}:{opt.line}, just before the step",
                                 site=f"{opt.file}:{opt.line}",
                                 what="total gradient norm, computed there (no clip runs)", steps="every step",
                                 tolerance=loose + why))
    if state.analysis is None or _anchor(state, "forward") is not None:  # a library's loop has no forward line
        checks += [
            Checkpoint(name="model outputs", where=where("forward", "the model forward call"), site=site("forward"),
                       what="mean |output|, shape, dtype", steps="steps 1-3", tolerance=tight + why),
            Checkpoint(name="batch", where=where("batch", where("forward", "the model forward call")),
                       site=site("batch", "forward"),
                       what="input shapes and dtypes", steps="steps 1-3", tolerance="exact"),
        ]
    return checks


def _off_by_default(a: Analysis | None, text: str) -> bool:
    """Whether a clip call's guard (`... if args.clip > 0`) is false under the flags' defaults."""
    if a is None or " if " not in text:
        return False
    guard = text.split(" if ", 1)[1]
    names = set(re.findall(r"[A-Za-z_]\w*", guard))
    for flag, default in a.flags.items():
        if flag.lstrip("-").replace("-", "_") in names and (default or "None").strip("'\"") in (
                "0", "0.0", "None", "False", ""):
            return True
    return False


def folders(state: InitState) -> list[str]:
    scan = state.detected.scripts
    return scan.folders[:9] if scan else []


def extra_check_examples(state: InitState) -> str:
    """Examples from the job itself: metrics it logs (beyond the loss), never unrelated function names."""
    rows = {_as_words(c.name) for c in state.checks}  # `grad_norm` is the "grad norm" row already there
    logged = [m for m in state.analysis.logged if "loss" not in m.lower() and _as_words(m) not in rows][:2] \
        if state.analysis else []
    return ", ".join(logged) if logged else "a metric you log, a second loss term"


def _as_words(name: str) -> str:
    """A metric's or row's name as words: `train/grad_norm` and "grad norm" are the same."""
    return " ".join(re.split(r"[\W_]+", name.rsplit("/", 1)[-1].lower())).strip()


def recorder(state: InitState) -> str:
    return state.detected.recorder or PARITY


def test_command(state: InitState) -> str:
    return state.detected.tests or ""


def _rank_given(run: str) -> bool:
    """Whether the run line's launcher passes `--local_rank` to each process itself."""
    launch = parse_launch(run)
    return launch is not None and passes_local_rank(launch.prefix, launch.launcher)


def _runs_in(state: InitState, run: str) -> tuple[Path, list[str], dict[str, Path]]:
    """The folder the run line runs in (the repo root, or where its `cd` goes), the variables it sets and what
    it links into that folder."""
    launch = parse_launch(run)
    if launch is None:
        return Path(state.repo_path), [], {}
    return Path(state.repo_path) / (launch.cwd or ""), launch.env, linked(run, Path(state.repo_path))


def missing_in_run(state: InitState, run: str) -> str:
    """The required inputs of the job's parser that the run line leaves out, said as a list."""
    a = state.analysis
    if a is None or not a.required:
        return ""
    args = job_args(run)
    if args is None:
        return ""
    return say_missing(missing_inputs(a.required, args, store_true(a), _rank_given(run), *_runs_in(state, run)),
                       _holes(state))


def _holes(state: InitState) -> list[str]:
    """The placeholders the job's documented command writes for its positionals (`{path_to_train_config}`)."""
    return [x for x in state.launch.left_out if not x.startswith("-")] if state.launch is not None else []


def left_out_of_run(state: InitState, run: str) -> str:
    """The options whose value the job's documented command leaves to the reader (`--model <your_path>`)
    that the run line does not give: without them the job would run on its defaults, a different job."""
    launch = state.launch
    if launch is None or not launch.left_out:
        return ""
    given = {a.split("=")[0] for a in job_args(run) or [] if a.startswith("-")}
    return ", ".join(x for x in launch.left_out if x.split(" ")[0] not in given)


def command_source(state: InitState) -> str:
    """Where the job's command was documented (a file name), to say where a left-out option comes from."""
    where = state.launch.source if state.launch is not None else ""
    return where.split(":")[0] if where else "The job's documented command"
