"""What bounds the training loop, read from the loop itself rather than from setting names.

A setting named like a step count (`--num-steps`) may count something else (an RL rollout's length); the
loop's own header says which setting stops it (`for it in range(1, args.num_iterations + 1)`). And a setting
the job assigns itself before the loop runs (`args.num_iterations = args.total_timesteps // args.batch_size`)
is no setting at all: a value given on the command line is overwritten.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from .nodes import walk
from .values import SETTINGS_OBJECTS

_BUILTINS = frozenset({"range", "len", "enumerate", "zip", "int", "min", "max", "tqdm", "trange"})


def header_reads(tree: ast.Module, line: int) -> list[str]:
    """The names the header of the loop at `line` reads (attributes by their last name): `num_iterations` of
    `range(1, args.num_iterations + 1)`, `max_steps` of `while step < cfg.max_steps`; none for `while True`."""
    for node in walk(tree):
        if isinstance(node, ast.For | ast.AsyncFor | ast.While) and node.lineno == line:
            header = node.test if isinstance(node, ast.While) else node.iter
            names = [n.attr if isinstance(n, ast.Attribute) else n.id for n in ast.walk(header)
                     if isinstance(n, ast.Attribute) or isinstance(n, ast.Name) and n.id not in _BUILTINS]
            return [n for n in dict.fromkeys(names) if n not in SETTINGS_OBJECTS and n != "self"]
    return []


def assigned_at_run_time(tree: ast.Module) -> list[str]:
    """The settings the job sets itself, on every run: `args.X = ...` in straight-line code of a function or
    of the `__main__` block (one under another condition may leave the user's value)."""
    found: list[str] = []
    for stmt in _straight_line(tree.body):
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            found += [t.attr for t in targets if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                      and t.value.id in SETTINGS_OBJECTS]
    return list(dict.fromkeys(found))


def _straight_line(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.With | ast.AsyncWith):
            yield from _straight_line(stmt.body)
        elif isinstance(stmt, ast.If) and _is_main(stmt.test):
            yield from _straight_line(stmt.body)


def _is_main(test: ast.expr) -> bool:
    return isinstance(test, ast.Compare) and any(isinstance(c, ast.Constant) and c.value == "__main__"
                                                 for c in test.comparators)
