"""The benchmark version of a training script: flags and environment variables
that make it short, pinned and side-effect free, never an edit of the script.

Follows the conversion rules of the downstream spec: same job, short (warm-up
then at least 10 steady steps within about 8 minutes), leaves nothing behind,
same answer twice, prefer the script's own flags, price what is switched off.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..model import Analysis, BenchmarkChange, Fact
from ..read.hydra_config import cpu_trainers
from ..read.reach import reached_effects
from ..read.settings import accepts, flag_name
from ..read.switches import switch_off
from ..read.systems.base import ConfigSystem
from ..read.systems.registry import system
from ..read.values import dest
from ..wording import system_label
from .cap import DEFAULT_STEPS, UNSET_DEFAULTS, epoch_control, step_control, total_steps
from .prices import EVAL_BATCHES_MIN, checkpoint_price, eval_batches_cut, eval_price

OUT_DIR = "runs/wamf-bench"
BENCH_NAME = "wamf-bench"  # a run or model name the job makes a folder of
MAX_EXCLUSIONS = 8  # save, eval and upload rows shown one by one; the rest no switch reaches are priced as one
TRACKER_ENV = {"wandb": "WANDB_MODE=disabled", "comet": "COMET_MODE=disabled", "swanlab": "SWANLAB_MODE=disabled",
               "clearml": "CLEARML_OFFLINE_MODE=1"}  # the variable that switches each tracker off, where it has one


def _named_as_in(switch: str | None, args: list[str] | tuple[str, ...]) -> str | None:
    """A switch under the older name its command already uses: transformers before 4.41 knows only
    `--evaluation_strategy`, which later ones renamed `--eval_strategy`."""
    if switch and switch.startswith("--eval_strategy") and any(w.split("=")[0] == "--evaluation_strategy"
                                                               for w in args):
        return switch.replace("--eval_strategy", "--evaluation_strategy", 1)
    return switch


# a check of settings, types or keys (`validate_expected_param_dtype`), or a predicate (`should_validate`): no eval
NOT_EVALS = re.compile(r"split|args|config|schema|backend|tool|input|^_|dtype|param|missing|unexpected|keys|shape"
                       r"|result|^(should|is|can|has)_", re.I)  # `validate_result(loss)`: a NaN check of a step


def _step_files(a: Analysis) -> set[str]:
    """The job's own files: its entry, where its training step is, and where the loop around it is (a
    trainer's loop over a step whose backward sits in a helper module)."""
    return {x.file for x in a.anchors if x.role == "backward"} | {a.script} \
        | ({a.train_loop.file} if a.train_loop else set())


_RANK = re.compile(r"rank|main_process|master|is_main|world|^(and|or|not|is|in|None)$", re.I)


def _when(f: Fact) -> str:
    """When a save or upload no switch reaches runs: under its guard (`if step % cfg.save_every == 0`, an
    interval the code sets), or every time the job gets there. Never said to run at every step when a
    condition the reading could not settle decides."""
    names = re.findall(r"[A-Za-z_][\w.]*", f.guard or "")
    if not names or "__name__" in names or all(_RANK.search(n) for n in names):  # rank 0 always gets there
        return "whenever the job reaches it"
    return f"when {f.guard} holds"


def _job_evals(a: Analysis) -> list[Fact]:
    """Evaluation passes the job runs: in its own entry or where its training step is, or a framework's
    (the `Trainer ...` rows its table adds where the parser is, a thin entry's imported module), one row a
    name. Not `train_test_split`, `validate_args`, a check of dtypes or keys, `should_validate`, or a
    library's `_validate_*` helper in a module it imports."""
    step_files = _step_files(a)
    seen: set[str] = set()
    kept = []
    for e in a.evals:
        own = e.file in step_files or e.name.startswith("Trainer ")
        if own and not NOT_EVALS.search(e.name) and e.name not in seen:
            seen.add(e.name)
            kept.append(e)
    return kept


def _dropped(how: str) -> list[str]:
    """A tracker's or an upload's store_true flag switched off by leaving it out: the command's own copy
    goes too (a `--push_to_hub` the README passes would upload on every run). Not for a save or an eval:
    their guard (`--use_ema`) can also change the training itself."""
    return [how.split()[0]] if "left off" in how else []


def _by_hand(a: Analysis) -> bool:
    """The job's own step updates its weights itself (`p -= lr * p.grad`, no optimizer step): the
    wrapper's cap, which counts optimizer steps, would never fire. A step whose optimizer is stepped
    elsewhere (another method, a library) is not this."""
    roles = {x.role for x in a.anchors}
    return "manual_update" in roles and "optimizer_step" not in roles


def _after_loop(a: Analysis, fact: Fact) -> str | None:
    """Where training ends when `fact` comes after it: after the loop in the same function, or after a
    call of that function in its caller (`train(...)`, then `save(...)`), or after a library trainer's
    `trainer.train()` / `.fit()`: it runs once, when training is done. Or inside a loop of epochs, after
    the loop over batches that holds the step, or after a call of the function that trains inside a loop
    of its caller (`for epoch in ...: train(epoch); test()`): it runs at each epoch's end. None otherwise
    (inside the step's own loop, before it, or elsewhere)."""
    loop, scope, inner = a.train_loop, a.train_scope, a.train_inner
    if loop is not None and scope is not None and fact.file == loop.file and loop.end < fact.line <= scope.end:
        return f"the training loop (ends at line {loop.end})"
    if loop is not None and inner is not None and fact.file == inner.file and inner.end < fact.line <= loop.end:
        return f"each pass of the loop that holds the step (an epoch; it ends at line {inner.end})"
    call = next((c for c in a.train_calls if c.file == fact.file and c.start < fact.line <= c.end), None)
    if call is not None and call.loop is not None:
        return f"each call that trains (line {call.start}, in the loop at line {call.loop}: an epoch)"
    return f"training (the call at line {call.start} that runs the loop returns)" if call else None


def _set_in_run(a: Analysis, args: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Flag -> value in the run line: the job's command's own, then each switch the table proposes
    (`--eval_strategy no`), which wins."""
    words = list(args)
    for f in (*a.trackers, *a.checkpoints, *a.evals, *a.uploads):
        off = switch_off(f.off_switch, a.flags, a.off_values)
        words += off[1] if off else []
    given: dict[str, str] = {}
    for i, w in enumerate(words):
        name, eq, value = w.partition("=")
        if name.startswith("--") and (eq or i + 1 < len(words) and not words[i + 1].startswith("-")):
            given[name] = value if eq else words[i + 1]
    return given


def _made_false(f: Fact, given: dict[str, str]) -> tuple[str, list[str], list[str]] | None:
    """(how, flags, env) when the run line's values make a conjunct of the guard false: `if
    args.eval_strategy != "no":` with `--eval_strategy no` given, `== "steps"` with another value, `if
    args.eval_every > 0 and (last_step or ...)` with `--eval-every=-1` (then not even the last step runs it)."""
    try:
        test = ast.parse(f.guard or "", mode="eval").body
    except SyntaxError:  # cut short, or `a ... b` (an interval's `if` and its own)
        return None
    for part in test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]:
        if not (isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], tuple(_COMPARE))
                and isinstance(part.comparators[0], ast.Constant)):
            continue
        left = part.left
        name = left.attr if isinstance(left, ast.Attribute) else left.id if isinstance(left, ast.Name) else ""
        flag = next((k for k in given if dest(k) == name), None)
        if flag is not None and _holds(given[flag], part.ops[0], part.comparators[0].value) is False:
            return f"{flag} {given[flag]} in the run line", [], []
    return None


_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b}


def _holds(value: str, op: ast.cmpop, constant: object) -> bool | None:
    """`value` (a word of the run line) against the guard's constant: numbers as numbers, else as text;
    None when an order is asked of text."""
    if isinstance(constant, int | float) and not isinstance(constant, bool):
        try:
            return bool(_COMPARE[type(op)](float(value), constant))
        except ValueError:
            return None
    if isinstance(op, ast.Eq | ast.NotEq):
        return bool(_COMPARE[type(op)](value, str(constant)))
    return None


def _every(f: Fact, does: str) -> str:
    """Who sets the interval: the code (`save_interval = 1000`), or the config file the command names."""
    if f.every_set:
        return f"it {does} every {f.every} steps ({f.every_set})"
    return f"the code {does} every {f.every} steps"


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
    """The folders the job makes by a literal relative path (`os.makedirs('logs')`), which no setting moves:
    named, with where, since from the repo root they land in the checkout."""
    tops: dict[str, Fact] = {}  # `logs/` once, for `'logs'` and `f'logs/{run_id}'`
    for made in a.output_dirs:
        if not made.off_switch and re.fullmatch(r"f?(['\"])(?!/|~|\$|\{)[^'\"]+\1", made.name):
            tops.setdefault(made.name.lstrip("f").strip("'\"").split("/")[0] + "/", made)
    if not tops:
        return None
    where = ", ".join(f"{top} ({f.file}:{f.line})" for top, f in list(tops.items())[:3])
    return BenchmarkChange(
        what="folders it makes by a fixed relative path", how="no setting moves them", enabled=False,
        why="they land in the folder the command runs in",
        exclusion=f"{where}: made relative to the folder the command runs in, and no setting moves them; from "
                  "the repo root they land in the checkout (run it from a folder of its own to keep them out)")


def _takes_folder(flag: str, a: Analysis) -> bool:
    """A flag the run line may point at the benchmark folder: not a switch (`--use-dist-ckpt`, a boolean), and
    not one a save or tracker needs set (Megatron's `if args.save:`): giving it would turn that on."""
    return a.flags.get(flag) not in ("False", "True") and not any(
        f.unset == flag for f in (*a.checkpoints, *a.trackers, *a.uploads, *a.evals))


def _runs_after(end: str | None) -> str | None:
    """A save or eval after the training call or loop: once when training is done, or at each epoch's end."""
    return f"runs {'' if end.startswith('each') else 'once, '}after {end}" if end else None


def _cap_first(end: str, steps: int | None) -> str:
    """Why the wrapper's step cap means it never runs: the job stops inside the training (or its first
    epoch, which the code cannot prove has more steps than the benchmark)."""
    if end.startswith("each"):
        return f"and the step cap stops the job in the first epoch (unless an epoch has under {steps} steps)"
    return "and the step cap stops the job inside it"


def _left_out(fact: Fact, a: Analysis, args: list[str] | tuple[str, ...], switch: bool = False) -> str | None:
    """How a feature is off when its condition needs a flag the command does not give (`if args.save_dir:`,
    `--save_dir` default None): the flag stays out of the run line; or a key the YAML file the command names
    leaves unset (`elif cfg.hub_model_id:`): the file stays as it is. None when the command gives it."""
    if fact.config_off and not any(fact.config_off.split(" ")[0].split(".")[-1] in w for w in args
                                   if not w.endswith((".yml", ".yaml"))):
        return fact.config_off
    if fact.unset is None or fact.unset in _needed_outputs(a):  # given the run folder: it runs, and writes there
        return None
    if _unset_given(fact, a, args, switch):
        return f"{fact.unset} dropped from the run line (unset, as by default)"
    return f"{fact.unset} left out (default {a.flags.get(fact.unset) or 'None'})"


def _needed_outputs(a: Analysis) -> set[str]:
    """Output folders the job cannot run without (a path built from their None default): the run line gives
    them the benchmark folder, whatever saves that turns on."""
    return {r.name for r in a.required if r.kind == "output"}


def _excluded_by(flag: str, a: Analysis, args: list[str] | tuple[str, ...]) -> list[str]:
    """The command's flags the job asserts are unset when `flag` is set (Megatron's `--train-samples` and its
    sample-based schedule, with `--train-iters`): the run line that sets `flag` must drop them."""
    others = set(a.exclusive.get(dest(flag), []))
    return list(dict.fromkeys(w.split("=")[0] for w in args if w.startswith("--") and dest(w) in others))


def _unset_given(fact: Fact, a: Analysis, args: list[str] | tuple[str, ...], switch: bool = False) -> list[str]:
    """The flag the command gives that turns the feature on (`--save ckpts` for `if args.save:`, default None):
    the benchmark's run line drops it, with its value. A boolean switch only where `switch` says it turns on a
    tracker (`--with_tracking`): a `--use_ema` guard around a save can also change the training itself."""
    flag = fact.unset
    if flag is None or not any(w.split("=")[0] == flag for w in args):
        return []
    default = a.flags.get(flag) or "None"
    return [flag] if default in UNSET_DEFAULTS or switch and default == "False" else []


def _past(fact: Fact, steps: int | None) -> bool:
    """The interval the code fixes (`step % 1000 == 0`, counted up first) is past the benchmark's steps."""
    return fact.every is not None and steps is not None and steps < fact.every


TIMED = "timed in every benchmark run (its price is in the contract)"  # a row's reason, when it still runs


def still_runs(fact: Fact) -> str | None:
    """What an interval switch cannot turn off, read from the guard: `step % n == 0` is true at step 0
    (unless the step was counted up before it), and a last-step condition fires at the end whatever the
    interval. None when the guard allows off."""
    guard = fact.guard
    if not guard:
        return None
    if not fact.counted and re.search(r"(?<![\w.])(?![\w.]*(rank|gpu|device|world|node|proc|worker))[\w.\[\]'\"]+\s*"
                                      r"%\s*[\w.\[\]'\"]+\s*==\s*0", guard) \
            and not re.search(r"(>|!=)\s*0|\b(and|or)\b.*>", guard):
        return f"still runs once, at step 0 ({guard} is true at 0)"
    if re.search(r"\blast\b|last_step|is_last|==\s*(max|total|num)_\w*(\s*-\s*1)?\b", guard):
        return f"still runs at the last step ({guard})"
    return None


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
    for t in a.trackers:
        # a tracker's own variable only (WANDB_MODE for wandb, ...): never one that controls another tracker
        var = TRACKER_ENV.get(t.name)
        left = _left_out(t, a, args, True)
        off = switch_off(t.off_switch, a.flags, a.off_values) or ((left, [], []) if left else None) \
            or ((var, [], [var]) if var else None)
        # under a condition no switch of the job's is known for (`if config.enable_tensorboard:`): it logs when
        # that holds, which the code may or may not make so; never said to log in every run
        when = f"when {t.guard} holds" if t.guard and not off else "in every run"
        stays = f"its \"enabled\": false in {t.file} stops it" if t.file.endswith(".json") else \
            f"only a code edit stops {t.name}; it writes where the job tells it"
        how, flags, env = off or (f"{t.name} stays on (limitation: {stays})", [], [])
        what = f"{t.name} tracker off ({t.file}:{t.line})" if off else \
            f"{t.name} tracker ({t.file}:{t.line}) has no switch: it logs {when}"
        changes.append(BenchmarkChange(what=what, how=how, flags=flags, env=env,
                                       drop=_dropped(how) + (_unset_given(t, a, args, True) if how == left else []),
                                       why="no runs on a tracker dashboard" if off else f"it logs {when}",
                                       enabled=off is not None, kind="tracker", sites=[f"{t.file}:{t.line}"],
                                       off=off is not None, exclusion=None if off else
                                       f"{t.name} tracker at {t.file}:{t.line} stays on: it logs {when}, and "
                                       "its logging is timed in every benchmark run"))
    for o in a.overheads:  # the file the run line keeps holds the switch: said, timed, never edited
        changes.append(BenchmarkChange(
            what=f"{o.name} on ({o.file}:{o.line}): it {o.cost}",
            how=f"stays on (limitation: only an edit of {o.file} turns it off)", why=f"it is {TIMED}",
            exclusion=f"{o.name} at {o.file}:{o.line} is on in every benchmark run, so it is timed: it {o.cost}"))
    own_files = _step_files(a)
    given = _set_in_run(a, args)
    # saves in the modules it imports that no switch of the job reaches: one row, not one per library helper
    # (but one a guard fires at step 0 is timed in every run, and said on its own)
    elsewhere = [c for c in a.checkpoints if c.file not in own_files and not still_runs(c)
                 and not switch_off(c.off_switch, a.flags, a.off_values) and not _left_out(c, a, args)]
    for c in a.checkpoints:
        if c in elsewhere:
            continue
        off = switch_off(c.off_switch, a.flags, a.off_values) or _made_false(c, given)
        if not off and (left := _left_out(c, a, args)):  # never runs, not even at step 0
            changes.append(BenchmarkChange(
                what=f"{c.name} off ({c.file}:{c.line})", how=left, why="no checkpoints left behind",
                drop=_unset_given(c, a, args), kind="save", sites=[f"{c.file}:{c.line}"], off=True,
                exclusion=f"checkpoint at {c.file}:{c.line} excluded ({left}); {checkpoint_price(a, c.off_switch)}"))
            continue
        if not off and _past(c, steps):
            changes.append(BenchmarkChange(
                what=f"{c.name} off ({c.file}:{c.line}): {_every(c, 'saves')}, past the benchmark's {steps}",
                how=f"{steps} steps, below the interval", why="no checkpoints left behind",
                kind="save", sites=[f"{c.file}:{c.line}"], off=True,
                exclusion=f"checkpoint at {c.file}:{c.line} excluded: it first runs at step {c.every}, past the "
                          f"benchmark's {steps}; {checkpoint_price(a, c.off_switch)}"))
            continue
        how, flags, env = off or ("stays on (limitation: only a code edit stops the write; it writes where the job "
                                  "tells it)", [], [])
        # after the loop, its guard counts epochs or the end, never steps: the loop must end first
        end = _after_loop(a, c) if not off else None
        if end and wrapper_cap:  # the cap stops the job inside the loop: the save after it never comes
            changes.append(BenchmarkChange(
                what=f"{c.name} off ({c.file}:{c.line}): it runs after {end}, {_cap_first(end, steps)}",
                how="WAMF_MAX_STEPS (wrapper)", kind="save", sites=[f"{c.file}:{c.line}"], off=True,
                why="no checkpoints left behind",
                exclusion=f"checkpoint at {c.file}:{c.line} excluded: it runs after {end}, which the wrapper's "
                          f"step cap stops first; {checkpoint_price(a, c.off_switch)}"))
            continue
        # no switch of its own: it writes whenever the job reaches it and its guard holds (into the run
        # folder, at best); none when the run line makes its guard false
        still = None if _made_false(c, given) else _runs_after(end) or still_runs(c) \
            or (None if off else f"has no switch: it runs {_when(c)}")
        changes.append(BenchmarkChange(
            what=f"{c.name} off ({c.file}:{c.line})" if not still else f"{c.name} ({c.file}:{c.line}) {still}",
            how=how, flags=flags, env=env, why=f"its write is {TIMED}" if still else "no checkpoints left behind",
            kind="save", sites=[f"{c.file}:{c.line}"], off=not still,
            exclusion=f"checkpoint at {c.file}:{c.line} " + (f"{still} in every benchmark run, so it is timed"
                                                             if still else "excluded")
            + f"; {checkpoint_price(a, c.off_switch)}"))
        if still and c.folder and not flags:
            # it writes whatever the switches: into a folder named for the benchmark, never over the job's own
            # (a name the command gives is the real run's, and is replaced)
            named = f"{c.folder}={BENCH_NAME}"
            changes.append(BenchmarkChange(
                what=f"{c.name} ({c.file}:{c.line}) writes into a folder named {BENCH_NAME}", how=named,
                flags=[named], drop=[c.folder] if any(w.split("=")[0] == c.folder for w in args) else [],
                why="its write lands beside the job's own checkpoints, never over them"))
    if elsewhere:  # saves in the modules it imports: one row, not one per library helper
        files = sorted({c.file for c in elsewhere})
        what = (f"{len(elsewhere)} save call(s) in imported modules ({', '.join(files[:3])}"
                + (f" and {len(files) - 3} more" if len(files) > 3 else "") + ")")
        changes.append(BenchmarkChange(
            what=what, how="no switch: they run only if the job calls them", why="priced, not timed",
            exclusion=f"{what} not switched off: they run whenever the job calls them; "
                      "price: bytes on disk / write bandwidth per call (to measure)"))
    for e in _job_evals(a):
        off = switch_off(_named_as_in(e.off_switch, args), a.flags, a.off_values) or _made_false(e, given)
        if not off and (left := _left_out(e, a, args)):
            changes.append(BenchmarkChange(
                what=f"eval {e.name} ({e.file}:{e.line}) out of the timed steps", how=left,
                drop=_unset_given(e, a, args), kind="eval", sites=[f"{e.file}:{e.line}"], off=True,
                why="evals are priced, not timed", exclusion=f"eval {e.name} at {e.file}:{e.line} excluded ({left}); "
                                                              f"{eval_price(a)}"))
            continue
        end = _after_loop(a, e) if not off else None  # after the call that trains: an epoch's end, or the job's
        if end and wrapper_cap:
            changes.append(BenchmarkChange(
                what=f"eval {e.name} ({e.file}:{e.line}) out of the timed steps: it runs after {end}, "
                     f"{_cap_first(end, steps)}", how="WAMF_MAX_STEPS (wrapper)", why="evals are priced, not timed",
                kind="eval", sites=[f"{e.file}:{e.line}"], off=True,
                exclusion=f"eval {e.name} at {e.file}:{e.line} excluded: it runs after {end}, which the wrapper's "
                          f"step cap stops first; {eval_price(a)}"))
            continue
        within = not off and e.every and (steps is None or steps >= e.every)  # the code's interval comes
        how, flags, env = off or (f"{steps} steps, below its interval ({e.every})" if _past(e, steps) else
                                  f"no switch: the code runs it every {e.every} steps" if within else
                                  f"no switch: the job runs it after {end}" if end else
                                  "no switch: its guard holds at step 0" if still_runs(e) else
                                  "step count below the eval interval", [], [])
        still = None if _made_false(e, given) else _runs_after(end) or still_runs(e) or (
            f"runs at step {e.every}: the code sets its interval" if within else None)
        cut = eval_batches_cut(a) if still else None
        changes.append(BenchmarkChange(
            what=f"eval {e.name} ({e.file}:{e.line}) " + (still if still else "out of the timed steps"),
            how=how, flags=flags, env=env, why=f"it is {TIMED}" if still else "evals are priced, not timed",
            kind="eval", sites=[f"{e.file}:{e.line}"], off=not still,
            exclusion=f"eval {e.name} at {e.file}:{e.line} " + (f"{still} in every benchmark run, so it is timed"
                                                               if still else "excluded")
            + f"; {eval_price(a)}"))
        if cut is not None and not any(c.flags == cut for c in changes):  # it runs whatever the cap: as few
            changes.append(BenchmarkChange(  # of its batches as its own setting allows
                what=f"batches of eval {e.name} ({e.file}:{e.line}) cut to {EVAL_BATCHES_MIN}", how=" ".join(cut),
                flags=cut, why="it runs whatever the step cap; its cost is timed, its result is not checked"))
    # unguarded uploads in the modules it imports (a library helper's own `upload_folder`): one row; one the
    # job's config decides (`elif cfg.hub_model_id:`) keeps its own
    far = [u for u in a.uploads if u.file not in own_files and not u.guard and not switch_off(
        u.off_switch if u.off_switch and u.off_switch.startswith("--") else None, a.flags, a.off_values)]
    for u in a.uploads:  # HF_HUB_OFFLINE would also block the model and data downloads the job needs
        if u in far:
            continue
        own = u.off_switch if u.off_switch and u.off_switch.startswith("--") else None
        left = _left_out(u, a, args)
        off = switch_off(own, a.flags, a.off_values) or ((left, [], []) if left else None)
        how, flags, env = off or (f"{u.name} stays on (limitation: only a code edit stops it)", [], [])
        what = f"{u.name} off ({u.file}:{u.line})" if off is not None else \
            f"{u.name} ({u.file}:{u.line}) has no switch: it runs {_when(u)}"
        changes.append(BenchmarkChange(what=what, how=how, flags=flags, env=env,
                                       drop=_dropped(how) + (_unset_given(u, a, args) if how == left else []),
                                       why="no uploads" if off else "it uploads in every run",
                                       kind="upload", sites=[f"{u.file}:{u.line}"], off=off is not None,
                                       enabled=off is not None, exclusion=None if off else
                                       f"{u.name} at {u.file}:{u.line} has no switch: it uploads {_when(u)}, "
                                       "timed in every benchmark run"))
    if far:
        files = sorted({u.file for u in far})
        what = (f"{len(far)} upload call(s) in imported modules ({', '.join(files[:3])}"
                + (f" and {len(files) - 3} more" if len(files) > 3 else "") + ")")
        changes.append(BenchmarkChange(
            what=what, how="no switch: they run only if the job calls them", why="the job's own uploads are above",
            enabled=False, exclusion=f"{what} not switched off: they run whenever the job calls them; "
                      "price: bytes uploaded / upload bandwidth per call (to measure)"))
    out = min(_needed_outputs(a), default=None) or next(
        (o.off_switch for o in a.output_dirs if o.off_switch and not o.off_switch.startswith("hydra.")
         and parser.settable(a, o.off_switch.split("=")[0])
         and _takes_folder(o.off_switch.split("=")[0], a)), None)
    if out:
        flag = out.split("=")[0]
        default = (a.flags.get(flag) or "").strip("'\"")
        # a flag that names a file (`--save model.pt`) gets a file inside the folder, not the folder itself
        target = f"{OUT_DIR}/{Path(default).name}" if Path(default).suffix else OUT_DIR
        words = parser.render(a, flag, target)
        for other in _more_outputs(a, flag, parser):  # mae's `--log_dir ./output_dir` beside its `--output_dir`
            words += parser.render(a, other, OUT_DIR)
        changes.append(BenchmarkChange(what="all outputs into one folder", how=" ".join(words), flags=words,
                                       why=f"what it writes stays in {OUT_DIR}, apart from your files"))
    elif not hydra and (fixed := _fixed_folders(a)):
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
    elif a.fixed_seed:  # `torch.manual_seed(42)` whatever the run: the same answer twice already
        how, flags, env = f"the job's own fixed seed ({a.fixed_seed})", [], []
    else:
        how, flags, env = "WAMF_SEED=0 (wrapper seeds python, numpy, torch)", [], ["WAMF_SEED=0"]
    changes.append(BenchmarkChange(what="seeds pinned", how=how, flags=flags, env=env, why="same answer twice"))
    if mode == "accuracy":
        changes.append(BenchmarkChange(what="deterministic algorithms on (accuracy mode)",
                                       how="WAMF_DETERMINISTIC=1 (wrapper)", env=["WAMF_DETERMINISTIC=1"],
                                       why="bit-exact checks; costs speed, so speed mode leaves it off"))
    return [_proven(a, c, args) for c in changes]


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
                and _holds("0", part.ops[0], part.comparators[0].value) is False:
            return True
    return False


def _capped(changes: list[BenchmarkChange]) -> list[BenchmarkChange]:
    """At most MAX_EXCLUSIONS save, eval and upload rows: past that, those no switch reaches (nothing to
    toggle) are priced together in one row, so the checklist and the contract stay readable."""
    rows = [c for c in changes if c.exclusion]
    loose = [c for c in rows if not c.flags and not c.env]
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


