"""The benchmark version of a training script: flags and environment variables
that make it short, pinned and side-effect free, never an edit of the script.

Follows the conversion rules of the downstream spec: same job, short (warm-up
then at least 10 steady steps within about 8 minutes), leaves nothing behind,
same answer twice, prefer the script's own flags, price what is switched off.
"""

from __future__ import annotations

import ast
import posixpath
import re
from pathlib import Path

from ..model import Analysis, BenchmarkChange, Fact
from ..read.hydra_config import cpu_trainers
from ..read.inputs import OUTPUT_WORDS
from ..read.reach import reached_effects
from ..read.settings import accepts, flag_name
from ..read.systems.base import ConfigSystem
from ..read.systems.registry import system
from ..read.values import dest
from ..wording import system_label
from .cap import DEFAULT_STEPS, UNSET_DEFAULTS, epoch_control, step_control, total_steps
from .effect_rows import BENCH_NAME, eval_rows, overhead_rows, save_rows, tracker_rows, upload_rows
from .raises import kept_from_raising
from .when import compares, needed_outputs

# the benchmark's outputs, as the changes table names them: the run line gives the folder itself, outside the
# checkout (`run_line.bench_folder`); `$WAMF_OUT` would not expand in the job's own words
OUT_DIR = "$WAMF_OUT"
MAX_EXCLUSIONS = 8  # save, eval and upload rows shown one by one; the rest no switch reaches are priced as one


def _by_hand(a: Analysis) -> bool:
    """The job's own step updates its weights itself (`p -= lr * p.grad`, no optimizer step): the
    wrapper's cap, which counts optimizer steps, would never fire. A step whose optimizer is stepped
    elsewhere (another method, a library) is not this."""
    roles = {x.role for x in a.anchors}
    return "manual_update" in roles and "optimizer_step" not in roles


def _more_outputs(a: Analysis, first: str, parser: ConfigSystem) -> list[str]:
    """The job's other output-folder flags whose default is a folder in the checkout (`--log_dir
    ./output_dir`): each goes to the benchmark folder too. One left at None or '' means "not written"."""
    out: list[str] = []
    for o in a.output_dirs:
        flag = (o.off_switch or "").split("=")[0]
        default = (a.flags.get(flag) or "").strip("'\"")
        if flag and flag != first and flag not in out and flag.startswith("-") and default not in ("", "None") \
                and not default.startswith(("/", "~", "$")) and parser.settable(a, flag) and _takes_folder(flag, a):
            out.append(flag)
    return out


def _fixed_folders(a: Analysis) -> BenchmarkChange | None:
    """The folders the job makes by a literal relative path (`os.makedirs('logs')`, a dataset downloaded into
    `./data`), which no setting moves. Where the job reads nothing by a path relative to the folder it runs in,
    it runs from the benchmark folder, its files named by a path back; else they are named, with where, since
    from the repo root they land in the checkout."""
    tops: dict[str, Fact] = {}  # `logs/` once, for `'logs'` and `f'logs/{run_id}'`
    for made in a.output_dirs:
        if not made.off_switch and re.fullmatch(r"f?(['\"])(?!/|~|\$|\{|\.\./)[^'\"]+\1", made.name):
            top = made.name.lstrip("f").strip("'\"").removeprefix("./").split("/")[0]
            tops.setdefault(f"{top}/", made)
    if not tops:
        return None
    where = ", ".join(f"{top} ({f.file}:{f.line})" for top, f in list(tops.items())[:3])
    reads = _read_here(a)
    links = _linkable([path for path, _ in reads], set(tops))
    if links is not None:
        linked = f", with links to what it reads there ({', '.join(links)})" if links else ""
        return BenchmarkChange(
            what="run from the benchmark folder", how=f"cd to the benchmark folder beside the checkout, its files "
                                                      f"by $OLDPWD{linked}",
            why=f"what it makes by a fixed relative path ({where}) lands in the benchmark folder, outside the "
                "checkout", folder=True, links=links)
    path, what = next(r for r in reads if _linkable([r[0]], set(tops)) is None)
    top = posixpath.normpath(path).split("/")[0]
    why = {"..": "outside the folder it runs in", ".": "in the folder it runs in, whole"}.get(top) or (
        f"in {top}/, which it also makes" if f"{top}/" in tops else "by a pattern")
    return BenchmarkChange(
        what="folders it makes by a fixed relative path", how="no setting moves them", enabled=False,
        why="they land in the folder the command runs in",
        exclusion=f"{where}: made relative to the folder the command runs in, and no setting moves them; from "
                  f"the repo root they land in the checkout. It cannot run from a folder of its own: it reads "
                  f"{path} ({what}) {why}")


def _linkable(paths: list[str], written: set[str]) -> list[str] | None:
    """The checkout's entries a job reading `paths` (relative to where it runs) needs linked into the benchmark
    folder, each once (`data` for `data/train/*.bin`); None when one cannot be: a path up out of the folder, or
    one under a folder the job also writes (through a link it would write into the checkout)."""
    tops: list[str] = []
    for path in paths:
        top = posixpath.normpath(path).split("/")[0]
        if top in ("..", ".") or f"{top}/" in written or any(ch in top for ch in "*?[{"):
            return None
        tops.append(top)
    return list(dict.fromkeys(tops))


def _read_here(a: Analysis) -> list[tuple[str, str]]:
    """What the job reads by a path relative to the folder it runs in: a literal path in its code, or an
    option's default (`--data_dir data/`) that is no output folder; each (path, where it is read)."""
    found = [(r.name, f"{r.file}:{r.line}") for r in a.cwd_reads]
    for flag, value in a.flags.items():
        path = (value or "").strip("'\"")
        if ("/" in path or re.search(r"\.\w+$", path)) and not path.startswith(("/", "~", "$", "{", "http")) \
                and not re.match(r"\d", path) and not OUTPUT_WORDS.search(dest(flag)):
            found.append((path, f"the default of {flag}"))
    return found


def _target(a: Analysis, flag: str, args: list[str] | tuple[str, ...]) -> str:
    """What an output setting is given: the benchmark folder; a file inside it for one that names a file
    (`--save model.pt`); for a run name that starts the paths the job writes (`--name flowers`), that name inside
    it, as the command or the default gives it."""
    default = (a.flags.get(flag) or "").strip("'\"")
    if any(o.prefix and o.name == flag for o in a.output_dirs):
        given = next((w.split("=", 1)[1] if "=" in w else args[i + 1] for i, w in enumerate(args)
                      if dest(w) == dest(flag) and w.startswith("-") and ("=" in w or i + 1 < len(args))), default)
        return f"{OUT_DIR}/{Path(given).name or BENCH_NAME}"
    return f"{OUT_DIR}/{Path(default).name}" if Path(default).suffix else OUT_DIR


def _takes_folder(flag: str, a: Analysis) -> bool:
    """A flag the run line may point at the benchmark folder: not a switch (`--use-dist-ckpt`, a boolean), and
    not one a save or tracker needs set (Megatron's `if args.save:`): giving it would turn that on."""
    return a.flags.get(flag) not in ("False", "True") and not any(
        f.unset == flag for f in (*a.checkpoints, *a.trackers, *a.uploads, *a.evals))


def _excluded_by(flag: str, a: Analysis, args: list[str] | tuple[str, ...]) -> list[str]:
    """The command's flags the job asserts are unset when `flag` is set (Megatron's `--train-samples` and its
    sample-based schedule, with `--train-iters`): the run line that sets `flag` must drop them."""
    others = set(a.exclusive.get(dest(flag), []))
    return list(dict.fromkeys(w.split("=")[0] for w in args if w.startswith("--") and dest(w) in others))




def propose(a: Analysis, steps: int | None = DEFAULT_STEPS, mode: str = "speed",
            args: list[str] | tuple[str, ...] = ()) -> list[BenchmarkChange]:
    """The changes table: what changes, the flag or variable it maps to, and why. `steps` None keeps the
    whole job; `args` are the job's command's own, which may set its step total."""
    a = reached_effects(a)
    changes: list[BenchmarkChange] = []
    wrapper_cap = False
    control = step_control(a)
    parser, hydra = system(a), a.config_system == "hydra"
    total = total_steps(control, args, a)
    if control is not None and not parser.settable(a, control.name) and control.file != a.script:
        total = None  # a name read in a module the entry imports (`max_iter = iteration`) says nothing of its total
    said = a.resolved.get(control.name) if control is not None else None
    where = f", {said.source}" if said is not None and said.source not in ("default", "command") \
        and said.value == total else ""  # the config file the command names set it
    was = f" (was {total}{where})" if total and total not in UNSET_DEFAULTS else ""
    if steps is None:
        changes.append(BenchmarkChange(what=f"whole job kept{was}", how="no step limit", why="it fits in one run",
                                       kind="steps"))
    else:
        flags: list[str]
        env: list[str]
        if control is not None and parser.settable(a, control.name):  # in the spelling its parser takes
            flags, env = parser.render(a, control.name, steps), []
            how = " ".join(flags)
        elif _by_hand(a) and (epochs := epoch_control(a)) is not None:  # nothing counts steps: the fewest
            flags, env, how = [f"{epochs.name}=1"], [], f"{epochs.name}=1 (one epoch: its weights are updated by " \
                "hand, so no optimizer step can be counted)"
        elif _by_hand(a):
            flags, env, how = [], [], "no switch: the job has no step flag and no optimizer step to count"
        else:
            flags, env, how = [], [f"WAMF_MAX_STEPS={steps}"], f"WAMF_MAX_STEPS={steps} (wrapper)"
        counted = bool(flags or env)
        wrapper_cap = counted and not flags  # the wrapper stops the job at the cap, mid-loop
        clash = _excluded_by(control.name, a, args) if flags and control is not None else []
        if clash:
            how += f" ({', '.join(clash)} dropped: the job asserts they are unset with it)"
        changes.append(BenchmarkChange(
            what=f"total steps cut to {steps}{was}" if counted else "whole job kept (nothing can cut it short)",
            how=how, flags=flags, env=env, enabled=counted, drop=clash, kind="steps", cap=steps if counted else None,
            why="short enough to repeat often (under ~8 min): warm-up until step time settles, then >=10 steady steps"
            if counted else
            "the wrapper counts optimizer steps, and this job updates its weights without one: give its own "
            "step limit in the run line if it takes over ~8 min"))
    changes += tracker_rows(a, args) + overhead_rows(a) + save_rows(a, steps, args, wrapper_cap) \
        + eval_rows(a, steps, args, wrapper_cap) + upload_rows(a, args)
    out = min(needed_outputs(a), default=None) or next(
        (o.off_switch for o in a.output_dirs if o.off_switch and not o.off_switch.startswith("hydra.")
         and parser.settable(a, o.off_switch.split("=")[0])
         and _takes_folder(o.off_switch.split("=")[0], a)), None)
    if out:
        flag = out.split("=")[0]
        words = parser.render(a, flag, _target(a, flag, args))
        for other in _more_outputs(a, flag, parser):  # mae's `--log_dir ./output_dir` beside its `--output_dir`
            words += parser.render(a, other, _target(a, other, args))
        changes.append(BenchmarkChange(what="all outputs into one folder", how=" ".join(words), flags=words,
                                       why="what it writes goes to one folder beside your checkout, never into it"))
    if not hydra and (fixed := _fixed_folders(a)):  # beside its output setting: `cache_dir="./data/"` no flag moves
        changes.append(fixed)
    for node in cpu_trainers(a, args):
        on = f"{node}.accelerator=gpu"
        changes.append(BenchmarkChange(what=f"Trainer on the GPU (its config says {node}.accelerator: cpu)", how=on,
                                       flags=[on], why="the optimizer times the job on the GPU, not on the CPU"))
    if hydra:
        run_dir = f"hydra.run.dir={OUT_DIR}"
        changes.append(BenchmarkChange(what="Hydra's run folder into the benchmark folder", how=run_dir,
                                       flags=[run_dir], why="no outputs/<date> folders in the checkout"))
    changes = _capped(changes)
    chosen = next((s for s in a.seeds if s.off_switch and (
        s.off_switch.startswith("--") or hydra and "=" not in s.off_switch
        or not hydra and parser.settable(a, s.off_switch))), None)
    seed = chosen.off_switch if chosen is not None else None
    if seed:
        # `if seed > 0:` skips a 0, around this call or around a seed call the same setting reaches in a helper
        # (OpenNMT's `set_random_seed(opt.seed)` seeds torch only under that test, in another module)
        name = seed.split("=")[0]
        value = 1 if any(_skips_zero(s.guard) for s in a.seeds
                         if (s.off_switch or "").split("=")[0].lstrip("-") == name.lstrip("-")) else 0
        words = [f"{name}={value}"] if name.startswith("-") or hydra else parser.render(a, name, value)
        how, flags, env = " ".join(words), words, []
        late = next((s.late for s in a.seeds if s.late), None)
        if late:  # its seed call comes after the model is built: the wrapper seeds before the job starts too
            how += f", and WAMF_SEED=0 (wrapper): the job seeds only after it builds the model ({late})"
            env = ["WAMF_SEED=0"]
    elif a.fixed_seed:  # `torch.manual_seed(42)` whatever the run: the same answer twice already
        how, flags, env = f"the job's own fixed seed ({a.fixed_seed})", [], []
    else:
        how, flags, env = "WAMF_SEED=0 (wrapper seeds python, numpy, torch)", [], ["WAMF_SEED=0"]
    changes.append(BenchmarkChange(what="seeds pinned", how=how, flags=flags, env=env, why="same answer twice"))
    if mode == "accuracy":
        changes.append(BenchmarkChange(what="deterministic algorithms on (accuracy mode)",
                                       how="WAMF_DETERMINISTIC=1 (wrapper)", env=["WAMF_DETERMINISTIC=1"],
                                       why="bit-exact checks; costs speed, so speed mode leaves it off"))
    return kept_from_raising(a, [_proven(a, c, args) for c in changes], args)



def _proven(a: Analysis, change: BenchmarkChange, args: list[str] | tuple[str, ...]) -> BenchmarkChange:
    """The change with only the flags the job's own parser is proven to take. One it refuses (a Trainer
    table's `--report_to none` on a fire job) is not added; one the reading cannot prove either way is not
    added and kept in `unproven`, for the user to give (the app asks; `--yes` refuses)."""
    verdicts: dict[str, str] = {}
    kept: list[str] = []
    verdict = "proven"
    for words in system(a).groups(change.flags):  # a flag's value words go with it (`--report_to none`)
        verdict = accepts(a, words[0], args)
        verdicts[words[0]] = verdict
        if verdict == "proven":
            kept += words
    refused = [w for w, v in verdicts.items() if v == "refused"]
    unproven = [w for w, v in verdicts.items() if v == "unknown"]
    if not refused and not unproven:
        return change
    label = system_label(a.config_system)
    notes = ([f"{', '.join(flag_name(f) for f in refused)}: no flag of its {label} parser"] if refused
             else []) + ([f"{', '.join(flag_name(f) for f in unproven)}: not proven to be a flag of its "
                          f"{label} parser"] if unproven else [])
    note = "; ".join(notes) + ", not added"
    left = bool(kept or change.env)
    return change.model_copy(update={
        "flags": kept, "how": f"{change.how} ({note})" if left else f"stays as it is ({note})",
        "enabled": change.enabled and left, "unproven": [w for w in change.flags if w in unproven],
        "exclusion": change.exclusion if left else f"{change.what}: not changed ({note})"})


def _skips_zero(guard: str | None) -> bool:
    """Whether a seed call's guard leaves a seed of 0 unseeded: it tests the seed's value for truth (`if
    cfg.get("seed"):`, `if args.seed:`) or holds it to a number 0 fails (`if seed > 0:`, `if seed >= 1`),
    itself or as one part of an `and`."""
    try:
        test = ast.parse(guard or "", mode="eval").body
    except SyntaxError:
        return False
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if isinstance(part, ast.Name | ast.Attribute | ast.Call) and "seed" in ast.unparse(part):
            return True
        if isinstance(part, ast.Compare) and len(part.ops) == 1 and "seed" in ast.unparse(part.left) \
                and isinstance(part.comparators[0], ast.Constant) \
                and compares("0", part.ops[0], part.comparators[0].value) is False:
            return True
    return False


def _capped(changes: list[BenchmarkChange]) -> list[BenchmarkChange]:
    """At most MAX_EXCLUSIONS save, eval and upload rows: past that, those no switch reaches (nothing to
    toggle) are priced together in one row, so the checklist and the contract stay readable. A row that
    changes the run line (a flag, a variable, a flag of the command dropped) is never merged: its change
    would be lost with it."""
    rows = [c for c in changes if c.exclusion]
    loose = [c for c in rows if not c.flags and not c.env and not c.drop]
    extra = len(rows) - (MAX_EXCLUSIONS - 1)
    if extra <= 1 or len(loose) < extra:
        return changes
    merged = loose[-extra:]
    places = sorted({m.group(1) for c in merged if (m := re.search(r"\(([^():\s]+):\d+\)", c.what))})
    what = f"{len(merged)} more save or eval calls no switch reaches ({', '.join(places[:3])}" + (
        f" and {len(places) - 3} more" if len(places) > 3 else "") + ")"
    row = BenchmarkChange(what=what, how="no switch: they run whenever the job reaches them", why="priced, not timed",
                          exclusion=f"{what} not switched off: " + "; ".join(c.what for c in merged)
                          + "; price: each as its kind above (to measure)")
    at = changes.index(merged[0])
    kept = [c for c in changes if c not in merged]
    return kept[:at] + [row] + kept[at:]


