"""The conditions a statement of the job runs under, as `source.Reader` walks down to it: the enclosing
`if`s and loops, what each counts up before a test (`step % n == 0` is false at step 0 when `step += 1`
came first), and what that makes of a save, an eval or a tracker: the flag that switches it off, a
condition the code fixes false, an interval it fixes, a flag it needs set.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ..model import GIVEN, Analysis
from .guards import (
    UNSET,
    above_zero,
    asserted_unset,
    conjuncts,
    counts_up,
    holds_settings,
    interval_terms,
    needs_set,
    setting_name,
    starts_ahead,
)
from .options import dotted_name

# Nodes with nothing below them the reader looks at: not walked into.
LEAVES = (ast.Name, ast.Constant, ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)


_TRAINS = re.compile(r"train|fit|backward|(^|[._])step$", re.I)


def _trains(stmts: list[ast.stmt]) -> bool:
    """Whether statements call anything that may train (`train(...)`, `trainer.fit(...)`, `loss.backward()`):
    an early `if args.dry_run: return` above them stops the job itself, and is never a feature's switch."""
    return any(isinstance(n, ast.Call) and _TRAINS.search(dotted_name(n.func))
               for s in stmts for n in ast.walk(s))


class GuardedReader:
    """The walk's control flow and what it says of the statement being read; `source.Reader` sets up the
    stacks these methods keep and read."""

    r: Analysis
    guards: list[ast.expr]
    counted: list[bool]
    blocks: list[set[str]]
    given: list[set[tuple[str, str]]]
    loops: list[int]
    counters: list[ast.stmt | set[str]]
    consts: dict[str, object]
    ahead: set[str]

    def unset_flag(self) -> str | None:
        """A flag of the job's parser that a condition around the statement needs set (`if args.save_dir and
        ...:`, `args.resume is not None`), whose default is None or False: left out of the run line, the
        statement never runs. Only a conjunct of an `and` chain, never `not x` or `x or y`."""
        for g in self.guards:
            for c in conjuncts(g):
                name = needs_set(c)
                flag = self.flag_for(name) if name else ""
                if flag.startswith("-") and flag in self.r.flags and (self.r.flags[flag] or "None") in UNSET:
                    return flag
        return None

    def fixed_false(self) -> str | None:
        """A condition around the statement that the code fixes false (`if args.save_checkpoint:` with the
        field's default False and nothing setting it): it never runs."""
        for g in self.guards:
            for c in conjuncts(g):
                key = self.fixed(c)
                if key and not self.consts[key]:
                    return f"{key} is {self.consts[key]!r} in the code"
        return None

    def fixed(self, node: ast.expr) -> str:
        """`node`'s name when the code fixes its value (an exec-style configurator makes every module
        global a setting: only a config object's fields count there), else ""."""
        key = dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""
        return key if key in self.consts and ("." in key or self.r.config_system != "configurator") else ""

    def fixed_interval(self) -> int | None:
        """The interval of an enclosing `x % n == 0` past step 0 whose `n` the code fixes (`save_interval =
        1000`): it first runs at step n."""
        for _, n in self.past_step_0():
            value = self.consts.get(self.fixed(n))
            if type(value) is int and value > 0:
                return value
        return None

    def interval_off(self) -> tuple[ast.expr, str] | None:
        """An enclosing `x % n == 0` past step 0 whose setting `n`, set past the benchmark's steps, leaves
        only `x == 0`, where this statement never runs. The `if` and the setting's flag."""
        for test, n in self.past_step_0():
            name = n.attr if isinstance(n, ast.Attribute) else n.id if isinstance(n, ast.Name) else None
            flag = self.flag_for(name) if name else ""
            if flag in self.r.flags or flag.endswith("=...") and name in self.r.module_globals:
                return test, flag
        return None

    def past_step_0(self) -> Iterator[tuple[ast.expr, ast.expr]]:
        """(the `if`, `n`) of each enclosing `x % n == 0`, innermost first, that is false at step 0: `x` was
        counted up before the test, or an enclosing `x > 0` holds."""
        above = {x for g in self.guards for t in conjuncts(g) if (x := above_zero(t)) and x in self.loop_counters()}
        for test, counted in zip(reversed(self.guards), reversed(self.counted), strict=True):
            for x, n in interval_terms(test):
                if counted or ast.unparse(x) in above:
                    yield test, n

    def guard(self) -> str | None:
        """The flag that switches the current statement on, read from the enclosing `if` (in a Hydra app,
        `if cfg.get("test"):` is switched off by the override `test=false`). Only a condition that needs the
        flag can be switched off by it: `if not args.no_wandb:` is off with `--no-wandb` given (said
        `--no-wandb (given)`), and no single flag of `if not args.a or args.b:` is its switch."""
        needed = conjuncts(self.guards[-1]) if self.guards else []  # `cfg.get("test") and not ...`
        key = next((k for p in needed if (k := self.hydra_key(p))), None)
        if key:
            return f"{key}=false"
        first = None  # a name that is no setting (a step counter, a local): only when nothing better is found
        for test in reversed(self.guards):
            if "__main__" in ast.dump(test):  # `if __name__ == "__main__":` runs the job; it switches nothing
                continue
            for part in conjuncts(test):
                negated = part.operand if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not) else None
                needed = negated is None and not (isinstance(part, ast.BoolOp) and isinstance(part.op, ast.Or))
                for n in ast.walk(part):
                    name = None
                    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute) \
                            and holds_settings(n.value.value) and self.flag_for(
                                grouped := f"{n.value.attr}.{n.attr}") in self.r.flags:
                        name = grouped  # `args.logger.tensorboard_dir`: the dotted group's `--logger.tensorboard_dir`
                    elif isinstance(n, ast.Attribute) and dotted_name(n.value) in (
                            "args", "cfg", "config", "opt", "opts", "self.args", "hparams", "training_args",
                            "FLAGS", "flags.FLAGS"):  # absl's flag values
                        name = n.attr
                    elif isinstance(n, ast.Name) and n.id not in ("step", "iter_num", "epoch", "i", "True", "False"):
                        name = n.id
                    if not name:
                        continue
                    flag = self.flag_for(name)
                    if not (flag in self.r.flags or flag.endswith("=...") and name in self.r.module_globals):
                        first = first or flag
                    elif needed:
                        return flag
                    elif n is negated and self.r.flags.get(flag) == "False":  # a store_true that turns it off
                        return f"{flag} {GIVEN}"
        return first

    def flag_for(self, dest: str) -> str:
        for opt in self.r.flags:
            if opt.startswith("-") and opt.lstrip("-").replace("-", "_") == dest:
                return opt
        if self.r.config_system == "configurator":
            return f"--{dest}=..."
        return dest

    # --- control flow ------------------------------------------------------

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        self.exclusive(node)
        self.counted.append(self.past_first_step(node.test))
        self.guards.append(node.test)
        counted = self.block(node.body)
        self.guards.pop()
        self.counted.pop()
        if self.given and counted:  # counted whenever this condition holds: a later `if` that tests it too sees it
            test = ast.unparse(node.test)
            self.given[-1].update((test, x) for x in counted)
        self.block(node.orelse)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        """`Accelerator(log_with=...) if args.with_tracking else Accelerator()`: the first runs under the test."""
        self.visit(node.test)
        self.counted.append(self.past_first_step(node.test))
        self.guards.append(node.test)
        self.visit(node.body)
        self.guards.pop()
        self.counted.pop()
        self.visit(node.orelse)

    def exclusive(self, node: ast.If) -> None:
        """`if args.train_iters and ...:` over `assert args.train_samples is None` (or `== 0`, or `not ...`):
        the two settings exclude each other, so a step flag added to a command that gives the other fails."""
        tests = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) \
            else [node.test]
        name = setting_name(tests[0].left if isinstance(tests[0], ast.Compare) else tests[0])
        if name is None:
            return
        for stmt in node.body:
            other = asserted_unset(stmt.test) if isinstance(stmt, ast.Assert) else None
            if other is not None and other != name and other not in self.r.exclusive.get(name, []):
                self.r.exclusive.setdefault(name, []).append(other)

    def block(self, body: list[ast.stmt]) -> set[str]:
        """A statement list that may not run: what it counts up counts only for the statements after it,
        inside it. Returns what it counted."""
        self.blocks.append(set())
        self.given.append(set())
        self.statements(body)
        self.given.pop()
        return self.blocks.pop()

    def statements(self, body: list[ast.stmt]) -> None:
        """Each statement in turn; those after `if x: return` run only where `x` is false, and are read under
        `not x` (DomainBed's `save_checkpoint`: `if args.skip_model_save: return`, then the save). An `if` that
        raises checks its input, and switches nothing."""
        depth = len(self.guards)
        for i, stmt in enumerate(body):
            self.visit(stmt)
            if isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.body[-1], ast.Return) \
                    and not _trains(body[i + 1:]):
                self.guards.append(ast.copy_location(ast.UnaryOp(op=ast.Not(), operand=stmt.test), stmt.test))
                self.counted.append(False)  # the two stacks stay side by side
        del self.guards[depth:], self.counted[depth:]

    def visit_loop(self, node: ast.For | ast.AsyncFor | ast.While) -> None:
        for child in (node.test,) if isinstance(node, ast.While) else (node.target, node.iter):
            if not isinstance(child, LEAVES):
                self.visit(child)
        self.loops.append(len(self.blocks))
        self.counters.append(node)
        self.block(node.body)
        self.counters.pop()
        self.loops.pop()
        self.block(node.orelse)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if self.loops and counts_up(node):
            self.blocks[-1].add(ast.unparse(node.target))
        self.generic_visit(node)

    def loop_counters(self) -> set[str]:
        """What the innermost loop counts up (`x += 1`) anywhere in its body, before or after the statement
        being read; walked only when a guard asks (`iter_num > 0`)."""
        if not self.counters:
            return set()
        loop = self.counters[-1]
        if not isinstance(loop, set):
            loop = self.counters[-1] = {ast.unparse(n.target) for stmt in loop.body for n in ast.walk(stmt)
                                        if isinstance(n, ast.AugAssign) and counts_up(n)}
        return loop

    def past_first_step(self, test: ast.expr) -> bool:
        """`x % n == 0` that is never true on the loop's first pass: `x` was counted up (`x += 1`) before
        the test on every path through the loop body that reaches it, was set past 0 before the loop
        (OpenRLHF's 1-indexed `step = resumed // n * k + 1`), or the test reads `(x + 1) % n`."""
        if not self.loops:
            return False
        start, conditions = self.loops[-1], conjuncts(test)
        if any((x := above_zero(t)) and x in self.loop_counters() for t in conditions):
            return True  # `iter_num > 0` on a counter of this loop: false on the first pass
        said = {ast.unparse(t) for t in conditions}  # counted under one of these conditions: counted here
        counted = set().union(*self.blocks[start:]) | {x for given in self.given[start:] for (t, x) in given
                                                       if t in said}
        found = False
        for x, _ in interval_terms(test):
            if not (starts_ahead(x) or ast.unparse(x) in counted | self.ahead or self.starts_past_zero(x)):
                return False
            found = True
        return found

    def starts_past_zero(self, x: ast.expr) -> bool:
        """`x` is the counter of an enclosing `for x in range(start, ...)` whose start is past 0: a positive
        number, `n + 1`, or a name set to one before (`self.first = self.last_step + 1`)."""
        said = ast.unparse(x)
        for loop in self.counters:
            if isinstance(loop, ast.For) and ast.unparse(loop.target) == said and isinstance(loop.iter, ast.Call) \
                    and dotted_name(loop.iter.func) == "range" and len(loop.iter.args) >= 2:
                start = loop.iter.args[0]
                return starts_ahead(start) or ast.unparse(start) in self.ahead
        return False
