"""How the job's conditions read: whether a test reads a setting, the setting a conjunct needs set or an
assert says is unset, intervals and counters that start past step 0, and the entry's saves and step lines
that the job's resolved values switch off."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from ..model import Analysis, Anchor, Span
from .crawl import (
    read_source,
)
from .step import ROLES, find_step, loop_of, name_of

SETTINGS = ("args", "opt", "opts", "self.args", "FLAGS", "flags.FLAGS")  # objects a parser's values are read from


UNSET = ("None", "False", "''", '""')  # defaults a flag left out keeps false


def tests_setting(test: ast.expr) -> bool:
    """Whether a condition reads a setting (`args.kd_dir is not None`, `getattr(args, "modelopt", False)`,
    `cfg.use_ema`): the branch is a feature the job's configuration turns on."""
    for n in ast.walk(test):
        if isinstance(n, ast.Attribute) and name_of(n.value, calls=True) in (*SETTINGS, "cfg", "config", "self.config"):
            return True
        if isinstance(n, ast.Call) and name_of(n.func, calls=True) == "getattr" and n.args \
                and name_of(n.args[0], calls=True) in SETTINGS:
            return True
    return False


def setting_name(node: ast.expr) -> str | None:
    """`args.train_iters` -> `train_iters`: a setting the parser gives; None for anything else."""
    owner, _, name = name_of(node, calls=True).rpartition(".")
    return name if owner in SETTINGS and name else None


def step_by_values(result: Analysis, tree: ast.Module, rel: str, dead: dict[int, str]) -> None:
    """The entry's step anchors where the job's values skip their lines (`if args.use_optimizer:` off, the
    batch remade under `if args.dream_training:` off): the step is read again past those branches, and its
    anchors there replace them (a hand-written update, `p.data.add_(p.grad, ...)`, for a skipped optimizer)."""
    if not any(a.file == rel and a.line in dead for a in result.anchors if a.role in ROLES):
        return
    again = {a.role: a for a in find_step(tree, rel, dead) or []}
    kept = [a for a in result.anchors
            if not (a.file == rel and a.role in ROLES and (a.line in dead or a.role in again))]
    result.anchors = kept + [a for role, a in again.items() if role in ROLES or role == "manual_update"]


def dead_by_values(result: Analysis, rel: str, dead: dict[int, str]) -> None:
    """Mark the entry's saves, evals, uploads and trackers that sit in a branch the job's resolved values
    (defaults, then the command) never take: `if isinstance(steps, int):` with `--checkpointing_steps`
    left at None."""
    for kind in ("checkpoints", "evals", "uploads", "trackers"):
        for f in getattr(result, kind):
            if f.file == rel and not f.dead and f.unset is None and f.line in dead:  # `unset`: said as left out
                f.dead = f"{dead[f.line]} is false with the job's values"


def asserted_unset(test: ast.expr) -> str | None:
    """The setting an assert says is unset: `args.x is None`, `args.x == 0`, `not args.x`."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return setting_name(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is | ast.Eq) \
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value in (None, 0):
        return setting_name(test.left)
    return None


def loop_of_the_optimizer_step(result: Analysis, root: Path, steps: list[Anchor]) -> None:
    """A backward in a helper with no loop of its module around it (a gradient accumulator's, called from a
    pipeline engine): the training loop is the one around the optimizer step the job takes in another
    module (`self.optimizer.step()` in `training_step`, called from `train`'s loop), found there the same
    way, and that step is the job's."""
    for a in steps:
        text, _ = read_source(root / a.file)
        try:
            tree = ast.parse(text or "")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        spans = loop_of(tree, a.line, stepped=optimizer_steps(text or ""), text=text or "")
        if spans:
            result.train_loop = Span(file=a.file, start=spans[0][0], end=spans[0][1])
            result.train_scope = Span(file=a.file, start=spans[1][0], end=spans[1][1])
            result.anchors.append(a)
            return


_SETTING_READ = re.compile(r"\b(?:args|opts?|FLAGS)\.(\w+(?:\.\w+)?)")  # `args.x`, a dotted group's `args.logger.x`


def unset_now_known(result: Analysis) -> None:
    """A guard's flag that only a module read later declares (Megatron's `--tensorboard-dir`, made from a
    dataclass in `arguments.py`, read after the `if args.tensorboard_dir:` in `global_vars.py`): the flag
    that conjunct needs set, as `unset_flag` finds it where the flag was known first."""
    dests = {opt.lstrip("-").replace("-", "_"): opt for opt in result.flags
             if opt.startswith("-") and (result.flags[opt] or "None") in UNSET}
    for kind in ("checkpoints", "evals", "uploads", "trackers"):
        for f in getattr(result, kind):
            if f.unset is None and (flag := _needed(f.guard, dests)):
                f.unset = flag


def _needed(guard: str | None, dests: dict[str, str]) -> str | None:
    """The flag (of `dests`, by the attribute it sets) one conjunct of `guard` needs set. The text is parsed only
    where it reads one of them (`args.x`)."""
    if not guard or not any(n in dests or n.split(".")[0] in dests for n in _SETTING_READ.findall(guard)):
        return None
    try:
        test = ast.parse(guard, mode="eval").body
    except SyntaxError:  # cut short, or `a ... b`
        return None
    return next((dests[n] for c in conjuncts(test) if (n := needs_set(c)) in dests), None)


def switches_now_known(result: Analysis, switched: Callable[[str | None], bool]) -> None:
    """A guard's flag that a parser call declares only after the guard was read (an HfArgumentParser's
    dataclass fields, added at the module's end): `if args.push_to_hub and accelerator.is_main_process:` is
    switched off by `--push_to_hub False` (HfArgumentParser reads a bool's value; a True default must be
    said), `if args.with_tracking:` by leaving the flag out, and `os.makedirs(args.output_dir)` is moved by
    `--output_dir`. `switched`: whether a fact's switch works as is."""
    dests = {opt.lstrip("-").replace("-", "_"): opt for opt in result.flags if opt.startswith("-")}
    hf = result.config_system in ("hf", "hf_trainer")
    for kind in ("checkpoints", "evals", "uploads", "trackers"):
        for f in getattr(result, kind):
            if not switched(f.off_switch) and (flag := _needed(f.guard, dests)):
                f.off_switch = f"{flag} False" if hf and result.flags[flag] == "True" else flag
    for f in result.output_dirs:  # `os.makedirs(args.output_dir)`, read before `--output_dir` was declared
        if f.off_switch in dests:
            f.off_switch = dests[f.off_switch]


def needs_set(conjunct: ast.expr) -> str | None:
    """The setting a conjunct needs set (`args.save_dir`, `args.resume is not None`, a dotted option group's
    `args.logger.tensorboard_dir`), else None."""
    c = conjunct
    if isinstance(c, ast.Compare) and len(c.ops) == 1 and isinstance(c.ops[0], ast.IsNot) \
            and isinstance(c.comparators[0], ast.Constant) and c.comparators[0].value is None:
        c = c.left
    if not isinstance(c, ast.Attribute):
        return None
    if name_of(c.value, calls=True) in SETTINGS:
        return c.attr
    group = c.value  # `args.logger.tensorboard_dir`, `self.strategy.args.logger.x`: a dotted group's `--logger.x`
    return f"{group.attr}.{c.attr}" if isinstance(group, ast.Attribute) and holds_settings(group.value) else None


def holds_settings(node: ast.expr) -> bool:
    """Whether `node` is the object a parser's values are read from (`args`, `self.strategy.args`)."""
    name = name_of(node, calls=True)
    return name in SETTINGS or name.endswith(".args")


def conjuncts(test: ast.expr) -> list[ast.expr]:
    """The parts of `a and b and c`, all of which hold when it does."""
    return test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]


_OPT_STEP = re.compile(r"\b[\w.]*opt\w*\.step\(|\.optimize\(\s*[\w.]*opt", re.I)  # `mp_trainer.optimize(opt)`


def optimizer_steps(text: str) -> tuple[int, ...]:
    """The lines of the module's `opt.step()` / `self.optimizer.step()` calls, read from its text (a walk
    of a large module's tree costs more than the rest of this)."""
    lines, line, at = [], 1, 0
    for m in _OPT_STEP.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        lines.append(line)
    return tuple(lines)


def field_default(value: ast.expr) -> object:
    """A class field's default: `x: bool = True`, `field(default=None)`, `Field(None, ...)`; True (something)
    for anything the reading cannot tell, so a key left out is never said to be unset."""
    if isinstance(value, ast.Call):
        given = next((k.value for k in value.keywords if k.arg == "default"), None)
        if given is None and value.args and name_of(value.func, calls=True).split(".")[-1] == "Field":
            given = value.args[0]
        value = given if given is not None else value
    return value.value if isinstance(value, ast.Constant) else True


def starts_ahead(x: ast.expr) -> bool:
    """A value past 0 by its form: a positive whole number, or `something + n`."""
    if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Add):
        x = x.right
    return isinstance(x, ast.Constant) and type(x.value) is int and x.value > 0


def counts_up(node: ast.AugAssign) -> bool:
    """`x += 1` (any positive integer)."""
    return isinstance(node.op, ast.Add) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, int) and node.value.value > 0


def above_zero(test: ast.expr) -> str | None:
    """The `x` of `x > 0`, `x != 0` or `x >= 1`: false on a loop's first pass when the loop counts `x` up from 0."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.comparators[0], ast.Constant) and (
            isinstance(test.ops[0], (ast.Gt, ast.NotEq)) and test.comparators[0].value == 0
            or isinstance(test.ops[0], ast.GtE) and test.comparators[0].value == 1):
        return ast.unparse(test.left)
    return None


def interval_terms(test: ast.expr) -> list[tuple[ast.expr, ast.expr]]:
    """The `x` and `n` of each `x % n == 0` in a condition: an interval a setting may switch off."""
    return [(n.left.left, n.left.right) for n in ast.walk(test)
            if isinstance(n, ast.Compare) and isinstance(n.left, ast.BinOp) and isinstance(n.left.op, ast.Mod)
            and len(n.ops) == 1 and isinstance(n.ops[0], ast.Eq)
            and isinstance(n.comparators[0], ast.Constant) and n.comparators[0].value == 0]
