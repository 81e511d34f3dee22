"""A job's settings at the values its parser resolves when the command leaves them out, and the
three-valued truth of a condition under those values.

`True`/`False` is what the code decides; `None` means the reading cannot tell (a call, a value
computed at run time, a setting whose default is not known), and no verdict may rest on it.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

UNKNOWN = object()  # a setting whose default cannot be read as a literal


def dest(flag: str) -> str:
    """The attribute a flag's value lands on: `--data-dir` -> `data_dir`."""
    return flag.lstrip("-").replace("-", "_")


def defaults(flags: Mapping[str, str | None]) -> dict[str, object]:
    """Each flag's default as a Python value, by the attribute its parser stores it on (`None` for a flag
    declared without a default, as argparse leaves it); UNKNOWN where the text is no literal."""
    values: dict[str, object] = {}
    for flag, text in flags.items():
        if not flag.startswith("-"):
            continue
        try:
            values[dest(flag)] = None if text is None else ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            values[dest(flag)] = UNKNOWN
    return values


def setting(node: ast.AST, values: Mapping[str, object]) -> str | None:
    """The setting an expression reads (`args.data_dir`, `script_args.dataset_name`): an attribute of a
    plain name, other than `self`, that names a known setting."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id != "self" \
            and node.attr in values:
        return node.attr
    return None


def settings_read(node: ast.AST, values: Mapping[str, object]) -> list[str]:
    """Every known setting an expression reads, in order, once each."""
    return list(dict.fromkeys(s for n in ast.walk(node) if (s := setting(n, values))))


def value_of(node: ast.AST, values: Mapping[str, object]) -> object:
    """The value of a setting or a literal; UNKNOWN for anything else."""
    name = setting(node, values)
    if name is not None:
        return values[name]
    if isinstance(node, ast.Constant):
        return node.value
    return UNKNOWN


def truth(node: ast.AST, values: Mapping[str, object]) -> bool | None:
    """Whether a condition holds with every setting at its default; None where that cannot be read."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = truth(node.operand, values)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        parts = [truth(v, values) for v in node.values]
        stop = isinstance(node.op, ast.Or)  # `or` is decided by a True, `and` by a False
        if stop in parts:
            return stop
        return None if None in parts else not stop
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = value_of(node.left, values), value_of(node.comparators[0], values)
        if left is UNKNOWN or right is UNKNOWN:
            return None
        op = node.ops[0]
        if isinstance(op, ast.Is | ast.IsNot):
            return (left is right) == isinstance(op, ast.Is)
        if isinstance(op, ast.Eq | ast.NotEq):
            return (left == right) == isinstance(op, ast.Eq)
        return None
    value = value_of(node, values)
    return None if value is UNKNOWN else bool(value)
