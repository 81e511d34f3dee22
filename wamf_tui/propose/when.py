"""When each effect of the job runs under the benchmark's run line: the guard around it read with the values
the command and the proposed switches give (`step % n == 0` is true at 0, a last-step branch, a flag left at
None), where training ends for what comes after it, and which of its rows are the job's own."""

from __future__ import annotations

import ast
import re

from ..model import Analysis, Fact
from ..read.switches import switch_off
from ..read.values import dest, is_option
from .cap import UNSET_DEFAULTS


def named_as_in(switch: str | None, args: list[str] | tuple[str, ...]) -> str | None:
    """A switch under the older name its command already uses: transformers before 4.41 knows only
    `--evaluation_strategy`, which later ones renamed `--eval_strategy`."""
    if switch and switch.startswith("--eval_strategy") and any(w.split("=")[0] == "--evaluation_strategy"
                                                               for w in args):
        return switch.replace("--eval_strategy", "--evaluation_strategy", 1)
    return switch


# a check of settings, types or keys (`validate_expected_param_dtype`), or a predicate (`should_validate`): no eval
NOT_EVALS = re.compile(r"split|args|config|schema|backend|tool|input|^_|dtype|param|missing|unexpected|keys|shape"
                       r"|result|^(should|is|can|has)_", re.I)  # `validate_result(loss)`: a NaN check of a step


def step_files(a: Analysis) -> set[str]:
    """The job's own files: its entry, where its training step is, where the loop around it is (a
    trainer's loop over a step whose backward sits in a helper module), and where a library's loop is started
    (`trainer.fit(...)` in the `train()` a Hydra entry calls)."""
    return {x.file for x in a.anchors if x.role == "backward"} | {a.script} \
        | ({a.train_loop.file} if a.train_loop else set()) | {s.file for s in a.train_calls}


_RANK = re.compile(r"rank|main_process|master|is_main|world|^(and|or|not|is|in|None)$", re.I)


def runs_when(f: Fact) -> str:
    """When a save or upload no switch reaches runs: under its guard (`if step % cfg.save_every == 0`, an
    interval the code sets), or every time the job gets there. Never said to run at every step when a
    condition the reading could not settle decides."""
    names = re.findall(r"[A-Za-z_][\w.]*", f.guard or "")
    if not names or "__name__" in names or all(_RANK.search(n) for n in names):  # rank 0 always gets there
        return "whenever the job reaches it"
    return f"when {f.guard} holds"


def job_evals(a: Analysis) -> list[Fact]:
    """Evaluation passes the job runs: in its own entry or where its training step is, or a framework's
    (the `Trainer ...` rows its table adds where the parser is, a thin entry's imported module), one row a
    name. Not `train_test_split`, `validate_args`, a check of dtypes or keys, `should_validate`, or a
    library's `_validate_*` helper in a module it imports."""
    own = step_files(a)
    seen: set[str] = set()
    kept = []
    for e in a.evals:
        if (e.file in own or e.name.startswith("Trainer ")) and not NOT_EVALS.search(e.name) and e.name not in seen:
            seen.add(e.name)
            kept.append(e)
    return kept


def dropped(how: str) -> list[str]:
    """A tracker's or an upload's store_true flag switched off by leaving it out: the command's own copy
    goes too (a `--push_to_hub` the README passes would upload on every run). Not for a save or an eval:
    their guard (`--use_ema`) can also change the training itself."""
    return [how.split()[0]] if "left off" in how else []


def after_loop(a: Analysis, fact: Fact) -> str | None:
    """Where training ends when `fact` comes after it: after the loop in the same function, or after a
    call of that function in its caller (`train(...)`, then `save(...)`), or after a library trainer's
    `trainer.train()` / `.fit()`: it runs once, when training is done. Or inside a loop of epochs, after
    the loop over batches that holds the step, or after a call of the function that trains inside a loop
    of its caller (`for epoch in ...: train(epoch); test()`): it runs at each epoch's end. None otherwise
    (inside the step's own loop, before it, or elsewhere). A framework's epoch-end save: each epoch."""
    loop, scope, inner = a.train_loop, a.train_scope, a.train_inner
    if fact.epoch_end:
        return "each training epoch (the framework runs it at the epoch's end)"
    if loop is not None and scope is not None and fact.file == loop.file and loop.end < fact.line <= scope.end:
        return f"the training loop (ends at line {loop.end})"
    if loop is not None and inner is not None and fact.file == inner.file and inner.end < fact.line <= loop.end:
        return f"each pass of the loop that holds the step (an epoch; it ends at line {inner.end})"
    call = next((c for c in a.train_calls if c.file == fact.file and c.start < fact.line <= c.end), None)
    if call is not None and call.loop is not None:
        return f"each call that trains (line {call.start}, in the loop at line {call.loop}: an epoch)"
    return f"training (the call at line {call.start} that runs the loop returns)" if call else None


def set_in_run(a: Analysis, args: list[str] | tuple[str, ...]) -> dict[str, str]:
    """Flag -> value in the run line: the job's command's own, then each switch the table proposes
    (`--eval_strategy no`), which wins."""
    words = list(args)
    for f in (*a.trackers, *a.checkpoints, *a.evals, *a.uploads):
        off = switch_off(f.off_switch, a.flags, a.off_values)
        words += off[1] if off else []
    given: dict[str, str] = {}
    for i, w in enumerate(words):
        name, eq, value = w.partition("=")
        if name.startswith("--") and (eq or i + 1 < len(words) and not is_option(words[i + 1])):
            given[name] = value if eq else words[i + 1]
    return given


def made_false(f: Fact, given: dict[str, str]) -> tuple[str, list[str], list[str]] | None:
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
        if flag is not None and compares(given[flag], part.ops[0], part.comparators[0].value) is False:
            return f"{flag} {given[flag]} in the run line", [], []
    return None


_COMPARE = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b, ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b}


def compares(value: str, op: ast.cmpop, constant: object) -> bool | None:
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


def every_said(f: Fact, does: str) -> str:
    """Who sets the interval: the code (`save_interval = 1000`), or the config file the command names."""
    if f.every_set:
        return f"it {does} every {f.every} steps ({f.every_set})"
    return f"the code {does} every {f.every} steps"


def runs_after(end: str | None) -> str | None:
    """A save or eval after the training call or loop: once when training is done, or at each epoch's end."""
    return f"runs {'' if end.startswith('each') else 'once, '}after {end}" if end else None


def cap_first(end: str, steps: int | None) -> str:
    """Why the wrapper's step cap means it never runs: the job stops inside the training (or its first
    epoch, which the code cannot prove has more steps than the benchmark)."""
    if end.startswith("each"):
        return f"and the step cap stops the job in the first epoch (unless an epoch has under {steps} steps)"
    return "and the step cap stops the job inside it"


def left_out(fact: Fact, a: Analysis, args: list[str] | tuple[str, ...], switch: bool = False) -> str | None:
    """How a feature is off when its condition needs a flag the command does not give (`if args.save_dir:`,
    `--save_dir` default None): the flag stays out of the run line; or a key the YAML file the command names
    leaves unset (`elif cfg.hub_model_id:`): the file stays as it is. None when the command gives it."""
    if fact.config_off and not any(fact.config_off.split(" ")[0].split(".")[-1] in w for w in args
                                   if not w.endswith((".yml", ".yaml"))):
        return fact.config_off
    if fact.unset is None or fact.unset in needed_outputs(a):  # given the run folder: it runs, and writes there
        return None
    if unset_given(fact, a, args, switch):
        return f"{fact.unset} dropped from the run line (unset, as by default)"
    if any(w.split("=")[0] == fact.unset for w in args):  # the command gives it, and it stays: it runs
        return None
    return f"{fact.unset} left out (default {a.flags.get(fact.unset) or 'None'})"


def given_anyway(off: tuple[str, list[str], list[str]] | None, args: list[str] | tuple[str, ...]) -> str | None:
    """The flag of a `--flag left off` way off that the command gives itself (its docs' `--use_ema`): leaving
    it out is then no way off unless the run line drops it."""
    return next((flag for flag in dropped(off[0] if off else "") if any(w.split("=")[0] == flag for w in args)),
                None)


# a switch named for evaluation (`--do_mmlu_eval`, `--validate`): leaving it out changes nothing but the eval
EVAL_SWITCH = re.compile(r"(^|[-_])(eval|evaluate|evaluation|validate|validation|val)([-_]|$)", re.I)


def eval_switch(flag: str | None) -> bool:
    """Whether `flag` is a switch named for evaluation, which the run line may drop from the command."""
    return flag is not None and EVAL_SWITCH.search(flag.lstrip("-")) is not None


def needed_outputs(a: Analysis) -> set[str]:
    """Output folders the job cannot run without (a path built from their None default): the run line gives
    them the benchmark folder, whatever saves that turns on."""
    return {r.name for r in a.required if r.kind == "output"}


def unset_given(fact: Fact, a: Analysis, args: list[str] | tuple[str, ...], switch: bool = False) -> list[str]:
    """The flag the command gives that turns the feature on (`--save ckpts` for `if args.save:`, default None):
    the benchmark's run line drops it, with its value. A boolean switch only where `switch` says it turns on a
    tracker (`--with_tracking`): a `--use_ema` guard around a save can also change the training itself."""
    flag = fact.unset
    if flag is None or not any(w.split("=")[0] == flag for w in args):
        return []
    default = a.flags.get(flag) or "None"
    return [flag] if default in UNSET_DEFAULTS or switch and default == "False" else []


def past_cap(fact: Fact, steps: int | None) -> bool:
    """The interval the code fixes (`step % 1000 == 0`, counted up first) is past the benchmark's steps."""
    return fact.every is not None and steps is not None and steps < fact.every


TIMED = "timed in every benchmark run (its price is in the contract)"  # a row's reason, when it still runs


def unread_when(fact: Fact) -> str:
    """When an eval runs, as far as it is read, where nothing read keeps it out of the timed steps: an interval
    the code computes (`step % self.strategy.accumulated_gradient == 0`), a condition no setting decides. Never
    said to be past the cap: what the reading cannot see may run."""
    interval = re.search(r"%\s*([^%=]+?)\s*==\s*0", fact.guard or "")
    if interval:
        return f"runs every {interval.group(1)} steps, a number not read: it may run within the timed steps"
    if fact.guard:
        return f"runs when {fact.guard}, which is not read: it may run within the timed steps"
    return "runs wherever the job calls it: nothing read keeps it out of the timed steps"


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
