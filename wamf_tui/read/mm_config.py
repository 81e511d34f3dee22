"""An mmengine Python config file read without running it: `Config.fromfile` executes the file, which the
app never does, so its module-level assignments are evaluated here from their literals (numbers, strings,
`dict(...)`, `{...}`, lists, names assigned above), its `_base_` files (a path or a list, or the new
style's `with read_base(): from .._base_.x import *`) merged first in order, a child's dict merged into its
base's key by key unless it says `_delete_=True`. What is not a literal stays unknown, never guessed."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..infra.files import read_text, rel_path

MAX_BYTES = 1024 * 1024  # a config file is small; a larger one is not read
_DEPTH = 8  # `_base_` files within `_base_` files


@dataclass(frozen=True)
class Leaf:
    """One setting's value as written (`None` for a literal None; `UNKNOWN` where it is not a literal),
    and where it was set."""

    value: Any
    file: str
    line: int


UNKNOWN = object()


def load(path: Path, root: Path) -> dict[str, Leaf]:
    """Every setting of the config at `path`, by its dotted key (`train_cfg.max_epochs`); {} when unreadable."""
    return flatten(_load(path, root, 0))


def flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Leaf]:
    out: dict[str, Leaf] = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def text(leaf: Leaf) -> str | None:
    """The value as `--cfg-options` would write it back (`None`, `200`, `CheckpointHook`); None if unknown."""
    if leaf.value is UNKNOWN:
        return None
    return str(leaf.value)


def _load(path: Path, root: Path, depth: int) -> dict[str, Any]:
    try:
        tree = ast.parse(read_text(path, MAX_BYTES))
    except (OSError, ValueError, SyntaxError, RecursionError):
        return {}
    rel = rel_path(path, root)
    merged: dict[str, Any] = {}
    names: dict[str, Any] = {}
    for stmt in tree.body:
        if depth < _DEPTH:
            for base in _bases(stmt, path):
                merged = _merge(merged, _load(base, root, depth + 1))
                names.update(merged)
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            name = stmt.targets[0].id
            if name == "_base_":
                continue
            value = _value(stmt.value, rel, names)
            names[name] = value
            if not name.startswith("_"):
                merged = _merge(merged, {name: value})
    return merged


def _bases(stmt: ast.stmt, path: Path) -> list[Path]:
    """The files a statement makes this config's bases, that exist."""
    found: list[str | Path] = []
    if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_base_" for t in stmt.targets):
        values = stmt.value.elts if isinstance(stmt.value, ast.List | ast.Tuple) else [stmt.value]
        found += [path.parent / v.value for v in values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
    elif isinstance(stmt, ast.With) and any("read_base" in ast.unparse(i.context_expr) for i in stmt.items):
        for inner in stmt.body:
            if isinstance(inner, ast.ImportFrom) and inner.level and inner.module:
                folder = path.parent
                for _ in range(inner.level - 1):
                    folder = folder.parent
                found.append(folder.joinpath(*inner.module.split(".")).with_suffix(".py"))
    return [p for p in (Path(f) for f in found) if p.is_file()]


def _value(node: ast.expr, rel: str, names: dict[str, Any]) -> Any:
    """A literal's value: a dict (nested) of Leaf values, or a Leaf."""
    made: dict[str, Any] | None = None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        made = {k.arg: _value(k.value, rel, names) for k in node.keywords if k.arg}
    elif isinstance(node, ast.Dict) and all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                            for k in node.keys):
        made = {str(k.value): _value(v, rel, names) for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant)}
    if made is not None:
        return made or Leaf({}, rel, node.lineno)  # `val_cfg = dict()`: set, with nothing in it
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    try:
        return Leaf(ast.literal_eval(node), rel, node.lineno)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return Leaf(_plain(node, names), rel, node.lineno)


def _plain(node: ast.expr, names: dict[str, Any]) -> Any:
    """A list of dicts (`vis_backends=[dict(type='LocalVisBackend')]`) as plain values; else unknown."""
    if isinstance(node, ast.List | ast.Tuple):
        items = [_value(e, "", names) for e in node.elts]
        plain = [_unwrap(i) for i in items]
        return UNKNOWN if any(p is UNKNOWN for p in plain) else plain
    return UNKNOWN


def _unwrap(value: Any) -> Any:
    if isinstance(value, dict):
        inner = {k: _unwrap(v) for k, v in value.items()}
        return UNKNOWN if any(v is UNKNOWN for v in inner.values()) else inner
    return value.value if isinstance(value, Leaf) else UNKNOWN


def _merge(base: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """mmengine's merge: a child's dict into its base's, key by key, unless it sets `_delete_=True`."""
    out = dict(base)
    for key, value in child.items():
        if isinstance(value, dict):
            delete = value.get("_delete_")
            fresh = {k: v for k, v in value.items() if k != "_delete_"}
            old = out.get(key)
            replace = isinstance(delete, Leaf) and delete.value is True
            out[key] = fresh if replace or not isinstance(old, dict) else _merge(old, fresh)
        elif not (isinstance(value, Leaf) and value.value == {} and isinstance(out.get(key), dict)):
            out[key] = value  # an empty `dict()` merged into a base's dict changes nothing
    return out
