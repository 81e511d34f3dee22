"""The fewest processes a job's code runs with: a check that stops it below a count of GPUs or ranks
(`if torch.cuda.device_count() < 2: sys.exit()`, `assert world_size >= 2`, or a helper of its own that
compares the device count with its argument). A benchmark with fewer processes times nothing: the job
exits. Read from the syntax tree, never run; a check the reading cannot follow gives no count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping

from ..model import ProcessSignal
from .step import name_of

EXITS = ("sys.exit", "exit", "quit", "os._exit")
_COUNTS = ("device_count", "get_world_size")  # torch.cuda / torch.accelerator / torch.distributed
_WORLD = ("WORLD_SIZE",)
_DEPTH = 6  # names and helpers followed, at most, from one check


def fewest(tree: ast.Module, rel: str, entry: bool = True) -> list[ProcessSignal]:
    """Each check of `tree` that stops the job below a count, with that count; an imported module's
    `__main__` block never runs (`entry` False)."""
    funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}
    top = {s.targets[0].id: s.value for s in tree.body if isinstance(s, ast.Assign) and len(s.targets) == 1
           and isinstance(s.targets[0], ast.Name) and isinstance(s.value, ast.Constant)}  # `MIN_GPUS = 2`
    found: list[ProcessSignal] = []
    for body, in_function in _bodies(tree, entry):
        env: dict[str, ast.expr] = dict(top)
        for stmt in body:
            n = _stops_below(stmt, env, funcs, in_function)
            if n is not None and n > 1:
                found.append(ProcessSignal(kind="fewest", file=rel, line=stmt.lineno, count=n,
                                           text=_short(stmt.test if isinstance(stmt, ast.If | ast.Assert) else stmt)))
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
                env[stmt.targets[0].id] = stmt.value
    return found


def _bodies(tree: ast.Module, entry: bool) -> Iterator[tuple[list[ast.stmt], bool]]:
    """Every statement list that runs in order: the module's, each function's, each `if`'s and `with`'s."""
    top = [s for s in tree.body if entry or not (isinstance(s, ast.If) and "__main__" in ast.dump(s.test))]
    todo: list[tuple[list[ast.stmt], bool]] = [(top, False)]
    while todo:
        body, in_function = todo.pop()
        yield body, in_function
        for stmt in body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                todo.append((stmt.body, True))
            elif isinstance(stmt, ast.If):
                todo += [(stmt.body, in_function), (stmt.orelse, in_function)]
            elif isinstance(stmt, ast.With | ast.Try):
                todo.append((stmt.body, in_function))


def _stops_below(stmt: ast.stmt, env: Mapping[str, ast.expr], funcs: Mapping[str, ast.FunctionDef],
                 in_function: bool) -> int | None:
    """The count below which `stmt` stops the job: an `assert`, or an `if` whose body ends in an exit."""
    if isinstance(stmt, ast.Assert):
        return _bound(stmt.test, True, env, funcs, 0)
    if isinstance(stmt, ast.If) and not stmt.orelse and stmt.body and _exits(stmt.body[-1], in_function):
        return _bound(stmt.test, False, env, funcs, 0)
    return None


def _exits(stmt: ast.stmt, in_function: bool) -> bool:
    """`sys.exit()`, `raise ...`, or (in the function that runs the job) a bare `return`."""
    if isinstance(stmt, ast.Raise):
        return True
    if isinstance(stmt, ast.Return):
        return in_function and stmt.value is None
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and name_of(stmt.value.func) in EXITS


def _bound(e: ast.expr, holds: bool, env: Mapping[str, ast.expr], funcs: Mapping[str, ast.FunctionDef],
           depth: int) -> int | None:
    """The fewest GPUs or ranks there are when `e` is `holds`; None when `e` says nothing of it."""
    if depth > _DEPTH:
        return None
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.Not):
        return _bound(e.operand, not holds, env, funcs, depth + 1)
    if isinstance(e, ast.BoolOp):
        parts = [_bound(v, holds, env, funcs, depth + 1) for v in e.values]
        every = isinstance(e.op, ast.And) == holds  # all parts hold (or all fail): each bound applies
        known = [p for p in parts if p is not None]
        if every:
            return max(known, default=None)
        return min(known) if known and len(known) == len(parts) else None
    if isinstance(e, ast.Name) and e.id in env:
        return _bound(env[e.id], holds, env, funcs, depth + 1)
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in funcs:
        inlined = _inline(funcs[e.func.id], e, env)
        return None if inlined is None else _bound(inlined[0], holds, inlined[1], funcs, depth + 1)
    if isinstance(e, ast.Compare) and len(e.ops) == 1:
        return _compared(e.left, e.ops[0], e.comparators[0], holds, env, depth)
    return None


_FLIP: dict[type, type] = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE,
                           ast.Eq: ast.Eq, ast.NotEq: ast.NotEq}


def _compared(left: ast.expr, op: ast.cmpop, right: ast.expr, holds: bool, env: Mapping[str, ast.expr],
              depth: int) -> int | None:
    """`count OP n` (either way round) that is `holds`: the fewest it leaves."""
    kind = type(op)
    if kind not in _FLIP:
        return None
    if not _is_count(left, env, depth):
        if not _is_count(right, env, depth):
            return None
        left, right, kind = right, left, _FLIP[kind]
    n = _int(right, env, depth)
    if n is None:
        return None
    if not holds:  # `count < n` fails: `count >= n`
        kind = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt, ast.Eq: ast.NotEq,
                ast.NotEq: ast.Eq}[kind]
    return {ast.GtE: n, ast.Gt: n + 1, ast.Eq: n}.get(kind)


def _inline(func: ast.FunctionDef, call: ast.Call,
            env: Mapping[str, ast.expr]) -> tuple[ast.expr, dict[str, ast.expr]] | None:
    """A helper's returned expression, with its own names and its parameters bound to the call's arguments."""
    returns = [s for s in func.body if isinstance(s, ast.Return) and s.value is not None]
    if len(returns) != 1:
        return None
    inner: dict[str, ast.expr] = {}
    for stmt in func.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            inner[stmt.targets[0].id] = stmt.value
    params = [a.arg for a in (*func.args.posonlyargs, *func.args.args)]
    defaults = dict(zip(params[len(params) - len(func.args.defaults):], func.args.defaults, strict=True))
    bound: dict[str, ast.expr] = dict(defaults)
    bound.update(zip(params, call.args, strict=False))
    bound.update({k.arg: k.value for k in call.keywords if k.arg})
    for name, value in bound.items():  # an argument is read where it is passed
        inner[name] = _resolved(value, env)
    return returns[0].value, inner  # type: ignore[return-value]


def _resolved(e: ast.expr, env: Mapping[str, ast.expr], depth: int = 0) -> ast.expr:
    while isinstance(e, ast.Name) and e.id in env and depth <= _DEPTH:
        e, depth = env[e.id], depth + 1
    return e


def _is_count(e: ast.expr, env: Mapping[str, ast.expr], depth: int) -> bool:
    """The number of GPUs or ranks: `torch.cuda.device_count()`, `dist.get_world_size()`, the launcher's
    `WORLD_SIZE`, or a name set to one of them."""
    e = _resolved(e, env, depth)
    if isinstance(e, ast.Call) and name_of(e.func) == "int" and e.args:
        e = _resolved(e.args[0], env, depth)
    if isinstance(e, ast.Call):
        if name_of(e.func).split(".")[-1] in _COUNTS:
            return True
        if name_of(e.func).endswith(("environ.get", "getenv")) and e.args:
            return isinstance(e.args[0], ast.Constant) and e.args[0].value in _WORLD
    if isinstance(e, ast.Subscript) and name_of(e.value).endswith("environ"):
        return isinstance(e.slice, ast.Constant) and e.slice.value in _WORLD
    return False


def _int(e: ast.expr, env: Mapping[str, ast.expr], depth: int) -> int | None:
    e = _resolved(e, env, depth)
    if isinstance(e, ast.Constant) and type(e.value) is int:
        return e.value
    return None


def _short(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 80 else text[:77] + "..."
