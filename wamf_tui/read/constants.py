"""Values fixed in the job's own code: a module-level `SAVE = False`, or a field of a config object the
module builds with no arguments (`args = Hyperparameters()`, `save_checkpoint: bool = False`). A save under
`if args.save_checkpoint:` never runs when nothing sets it, and one under `step % save_interval == 0` with
`save_interval = 1000` not within a 30-step benchmark: neither is the benchmark's to switch off.
"""

from __future__ import annotations

import ast
import re


def fixed_constants(tree: ast.Module, text: str) -> dict[str, object]:
    """`name` or `obj.field` -> its literal value, for each one assigned once at module level (or a field
    default of a class built there with no arguments) and never assigned again."""
    found: dict[str, object] = {}
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assigned: dict[str, int] = {}
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
            if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []
        for t in targets:
            if isinstance(t, ast.Name):
                assigned[t.id] = assigned.get(t.id, 0) + 1
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)):
            continue
        name, value = node.targets[0].id, node.value
        if isinstance(value, ast.Constant):
            found[name] = value.value
        elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id in classes \
                and not value.args and not value.keywords:
            found.update(_fields(name, classes[value.func.id]))
    elsewhere = _set_elsewhere(text)
    return {k: v for k, v in found.items() if assigned.get(k.split(".")[0], 0) <= 1 and k not in elsewhere
            and not ("." in k and k.split(".")[0] in elsewhere.setattr_objects)}


def _fields(obj: str, cls: ast.ClassDef) -> dict[str, object]:
    out: dict[str, object] = {}
    for stmt in cls.body:
        target: ast.expr
        if isinstance(stmt, ast.AnnAssign):
            target, value = stmt.target, stmt.value
        elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        else:
            continue
        if isinstance(target, ast.Name) and isinstance(value, ast.Constant):
            out[f"{obj}.{target.id}"] = value.value
    return out


_FIELD_SET = re.compile(r"\b(\w+)\.(\w+)\s*(?:=(?!=)|[+\-*/|&]=)")
_SETATTR = re.compile(r"setattr\(\s*(\w+)\b")
_GLOBAL = re.compile(r"\bglobal\b([^\n]*)")


class _Elsewhere(set):
    """The names assigned in a function (`global SAVE`) and the `obj.field`s assigned anywhere; with
    `setattr_objects`, the objects set through `setattr`. One pass over the text for all the constants:
    a search per constant made a module of 100,000 constants take minutes."""

    setattr_objects: set[str]


def _set_elsewhere(text: str) -> _Elsewhere:
    """Assigned in a function (`global SAVE`; `args.save = True`), or set through `setattr`: not fixed."""
    found = _Elsewhere(f"{m.group(1)}.{m.group(2)}" for m in _FIELD_SET.finditer(text))
    found.update(name for m in _GLOBAL.finditer(text) for name in re.findall(r"\w+", m.group(1)))
    found.setattr_objects = {m.group(1) for m in _SETATTR.finditer(text)}
    return found
