"""argparse flags made from a dict of defaults (OpenAI's diffusion scripts: `defaults = dict(lr=1e-4, ...)`,
`defaults.update(model_and_diffusion_defaults())`, then `add_dict_to_argparser(parser, defaults)`, whose loop
adds `--{k}` with default `v` for each key). The keys are the flags: read from the dict literals, their
updates and the repo functions that return such a dict. Without this the parser reads as open (its flag
names are computed when it runs) and no flag can be proven."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from ..model import Analysis
from .lengths import length_control
from .options import literal_text
from .systems.modules import imported_files, parsed

Functions = dict[str, ast.FunctionDef]


def dict_flags(tree: ast.Module, rel: str, a: Analysis, find: Callable[[str], Path | None]) -> bool:
    """Add the flags of every `adder(parser, defaults)` call of the entry; whether any were read."""
    functions: Functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for path in imported_files(tree, rel, find, depth=2):
        for n in parsed(path).body:
            if isinstance(n, ast.FunctionDef):
                functions.setdefault(n.name, n)
    adders = {name for name, f in functions.items() if _adds_from_dict(f)}
    found = False
    for caller in functions.values():
        for call in (n for n in ast.walk(caller) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                     and n.func.id in adders and len(n.args) == 2):
            keys = _dict_of(call.args[1], caller, call.lineno, functions, 0)
            if keys is None:
                return False  # one dict not read whole: the parser stays open
            for key, value in keys.items():
                flag, default = f"--{key}", literal_text(value)
                a.flags.setdefault(flag, default)
                if control := length_control(flag, default, rel, call.lineno):
                    a.step_controls.append(control)
            found = True
    return found


def _adds_from_dict(f: ast.FunctionDef) -> bool:
    """`for k, v in d.items(): parser.add_argument(f"--{k}", default=v, ...)` over one of its parameters."""
    params = {x.arg for x in f.args.args}
    for loop in (n for n in ast.walk(f) if isinstance(n, ast.For)):
        over = loop.iter
        if not (isinstance(over, ast.Call) and isinstance(over.func, ast.Attribute) and over.func.attr == "items"
                and isinstance(over.func.value, ast.Name) and over.func.value.id in params):
            continue
        if any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "add_argument"
               and c.args and isinstance(c.args[0], ast.JoinedStr) and ast.unparse(c.args[0]).startswith("f'--{")
               for c in ast.walk(loop)):
            return True
    return False


def _dict_of(node: ast.expr, scope: ast.FunctionDef, before: int, functions: Functions,
             depth: int) -> dict[str, ast.expr] | None:
    """The keys and values of the dict `node` holds at line `before` of `scope`; None where one part is not
    a literal or a repo function returning one."""
    if depth > 6:
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        if any(k.arg is None for k in node.keywords):
            return None
        return {k.arg: k.value for k in node.keywords if k.arg}
    if isinstance(node, ast.Dict):
        if not all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys):
            return None
        return {k.value: v for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[union-attr]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions and not node.args:
        f = functions[node.func.id]
        ret = next((n for n in ast.walk(f) if isinstance(n, ast.Return) and n.value is not None), None)
        return _dict_of(ret.value, f, ret.lineno, functions, depth + 1) if ret is not None and ret.value else None
    if isinstance(node, ast.Name):
        return _named(node.id, scope, before, functions, depth)
    return None


def _named(name: str, scope: ast.FunctionDef, before: int, functions: Functions,
           depth: int) -> dict[str, ast.expr] | None:
    """`d = dict(...)` then `d.update(...)`, each above `before` in `scope`, in order."""
    out: dict[str, ast.expr] | None = None
    for stmt in sorted((n for n in ast.walk(scope) if isinstance(n, ast.stmt) and n.lineno < before),
                       key=lambda n: n.lineno):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            out = _dict_of(stmt.value, scope, stmt.lineno, functions, depth + 1)
            if out is None:
                return None
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and isinstance(
                stmt.value.func, ast.Attribute) and stmt.value.func.attr == "update" and isinstance(
                stmt.value.func.value, ast.Name) and stmt.value.func.value.id == name and out is not None:
            call = stmt.value
            if len(call.args) > 1 or any(k.arg is None for k in call.keywords):
                return None
            more = _dict_of(call.args[0], scope, stmt.lineno, functions, depth + 1) if call.args else {}
            if more is not None:  # `d.update(other)` and `d.update(k=v)`
                more.update({k.arg: k.value for k in call.keywords if k.arg})
            if more is None:
                return None
            out.update(more)
    return out
