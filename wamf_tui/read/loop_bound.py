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


def break_bound(tree: ast.Module, line: int) -> tuple[str, list[str]]:
    """The local a test at the top of the loop at `line` breaks on (`if state["iter_num"] >= max_iters: break`),
    where its function computes it before the loop, and the names that computation reads, followed through the
    locals it uses (`max_iters = max_tokens_per_device // tokens_per_iter`, `max_tokens_per_device =
    train.max_tokens // fabric.world_size`). ("", []) where the loop has no such test."""
    for func in walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        loop = next((n for n in func.body if isinstance(n, ast.For | ast.AsyncFor | ast.While) and n.lineno == line),
                    None)
        if loop is None:
            continue
        assigned = {t.id: s.value for s in func.body if isinstance(s, ast.Assign) and s.lineno < line
                    for t in s.targets if isinstance(t, ast.Name)}
        for stmt in loop.body[:2]:
            if isinstance(stmt, ast.If) and any(isinstance(b, ast.Break) for b in stmt.body) \
                    and isinstance(stmt.test, ast.Compare):
                bound = next((n.id for side in stmt.test.comparators for n in ast.walk(side)
                              if isinstance(n, ast.Name) and n.id in assigned), "")
                return (bound, _reads(bound, assigned, set())) if bound else ("", [])
    return "", []


def _reads(name: str, assigned: dict[str, ast.expr], seen: set[str]) -> list[str]:
    """The names (attributes by their last name) a local's value reads, through the locals it reads."""
    seen.add(name)
    found: list[str] = []
    for n in ast.walk(assigned[name]):
        if isinstance(n, ast.Attribute):
            found.append(n.attr)
        elif isinstance(n, ast.Name) and n.id in assigned and n.id not in seen:
            found += _reads(n.id, assigned, seen)
    return found
