"""Where a job's writes go: the settings that name the folder a save lands in."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from .nodes import walk
from .values import defaults, dest, setting, settings_objects

# A setting that names a run or a model, which the job makes a folder of (`--model-tag`, `--run_name`)
FOLDER_NAME = re.compile(r"(^|_)(tag|name|exp|expname|run)$")


def folder_flags(tree: ast.Module, line: int, flags: Mapping[str, str | None]) -> list[str]:
    """The text settings that name the folder the write at `line` goes to: a run or model name joined into
    its path (`save_checkpoint(checkpoint_dir, ...)`, `checkpoint_dir = os.path.join(base, "ckpts", name)`,
    `name = args.model_tag if args.model_tag else ...`), followed back through the module's assignments, at
    most six steps. Only a name inside a path the code builds counts (never the saved object's settings),
    and only a setting named as a name or tag (an input path such as `--ft_path` is no folder name)."""
    values = defaults(flags, settings_objects(tree))
    spelled = {dest(f): f for f in flags if f.startswith("-")}
    call, assigned = _write_call(tree, line)
    if call is None:
        return []
    found: list[str] = []
    todo: list[tuple[ast.AST, int, bool]] = [(arg, 0, False) for arg in (*call.args, *(k.value for k in call.keywords))]
    seen: set[tuple[str, bool]] = set()
    while todo:
        expr, hops, in_path = todo.pop(0)
        in_path = in_path or _builds_path(expr)
        name = setting(expr, values)
        if name is not None:
            if in_path and FOLDER_NAME.search(name) and (values[name] is None or isinstance(values[name], str)) \
                    and name not in found:
                found.append(name)
            continue
        if isinstance(expr, ast.Name):
            if (expr.id, in_path) not in seen and hops < 6:
                seen.add((expr.id, in_path))
                todo += [(v, hops + 1, in_path) for v in assigned.get(expr.id, [])]
            continue
        todo += [(child, hops, in_path) for child in ast.iter_child_nodes(expr)]
    return [spelled.get(n, f"--{n}") for n in found]


def _write_call(tree: ast.Module, line: int) -> tuple[ast.Call | None, dict[str, list[ast.expr]]]:
    """The call at `line` (the write), and every value the module assigns to each plain name, to follow its
    arguments back."""
    call = next((n for n in walk(tree) if isinstance(n, ast.Call) and n.lineno == line), None)
    assigned: dict[str, list[ast.expr]] = {}
    for node in walk(tree) if call is not None else ():
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
    return call, assigned


def _builds_path(expr: ast.AST) -> bool:
    """`os.path.join(...)`, `Path(...)`, an f-string, or `a + b` / `a / b`: a path made of its parts."""
    if isinstance(expr, ast.Call):
        func = expr.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        return last in ("join", "Path", "PurePath")
    return isinstance(expr, ast.JoinedStr) or isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add | ast.Div)


def path_prefixes(tree: ast.Module, flags: Mapping[str, str | None]) -> list[tuple[str, int]]:
    """The run-name settings that start a relative path the job makes (k-diffusion's `f'{args.name}_state.json'`,
    `f'{args.name}_{step:08}.pth'`): every file so named lands in the folder the job runs in, so the setting
    itself carries the benchmark's folder (`--name $WAMF_OUT/<name>`). Each (flag, first line)."""
    values = defaults(flags, settings_objects(tree))
    spelled = {dest(f): f for f in flags if f.startswith("-")}
    found: dict[str, int] = {}
    for node in walk(tree):
        if not isinstance(node, ast.JoinedStr) or len(node.values) < 2:
            continue
        head, rest = node.values[0], node.values[1]
        name = setting(head.value, values) if isinstance(head, ast.FormattedValue) else None
        if name is None or not FOLDER_NAME.search(name) or not isinstance(rest, ast.Constant) \
                or not str(rest.value).startswith(("_", "-", ".", "/")):
            continue
        default = values[name]
        if isinstance(default, str) and default.startswith(("/", "~", "$")) or default is not None \
                and not isinstance(default, str):
            continue
        found.setdefault(spelled.get(name, f"--{name}"), node.lineno)
    return list(found.items())


def checkpoint_read(tree: ast.Module, rel: str) -> tuple[str, list[str]] | None:
    """Where the code reads an attribute of a Lightning Trainer's checkpoint callback with no test of it first
    (flash-attention's `trainer.checkpoint_callback.best_model_path` after `fit`): `file:line`, and the settings
    the `if`s around it test (`if cfg.get("test"):`, which the benchmark may switch off); else None."""
    nodes = list(walk(tree))
    if any(isinstance(n, ast.If | ast.IfExp) and "checkpoint_callback" in ast.dump(n.test) for n in nodes):
        return None
    read = next((n for n in nodes if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Attribute)
                 and n.value.attr == "checkpoint_callback"), None)
    if read is None:
        return None
    around = [n.test for n in nodes if isinstance(n, ast.If) and n.body
              and n.body[0].lineno <= read.lineno <= (n.body[-1].end_lineno or 0)]
    tested = [c.args[0].value for t in around for c in ast.walk(t) if isinstance(c, ast.Call) and c.args
              and isinstance(c.args[0], ast.Constant) and isinstance(c.args[0].value, str)]
    tested += [a.attr for t in around for a in ast.walk(t) if isinstance(a, ast.Attribute)]
    return f"{rel}:{read.lineno}", tested


def root_flags(tree: ast.Module, line: int, flags: Mapping[str, str | None]) -> list[str]:
    """The flags that set the folder a save at `line` starts its path with, read through a config object the
    flag overrides: nanoVLM saves to `os.path.join(vlm_cfg.vlm_checkpoint_path, run_name, ...)`, a dataclass
    field defaulting to the relative `checkpoints`, which `--vlm_checkpoint_path` replaces. The first part of a
    path the code builds, followed back through the module's assignments (at most six steps), counts when it
    is an attribute named as one of the job's flags."""
    spelled = {dest(f): f for f in flags if f.startswith("-")}
    call, assigned = _write_call(tree, line)
    if call is None:
        return []
    found: list[str] = []
    todo: list[tuple[ast.expr, int]] = [(arg, 0) for arg in (*call.args, *(k.value for k in call.keywords))]
    while todo:
        expr, hops = todo.pop(0)
        if isinstance(expr, ast.Name) and hops < 6:
            todo += [(v, hops + 1) for v in assigned.get(expr.id, [])]
        elif _builds_path(expr):
            first = _first_part(expr)
            if isinstance(first, ast.Attribute) and first.attr in spelled and spelled[first.attr] not in found:
                found.append(spelled[first.attr])
            elif first is not None:
                todo.append((first, hops + 1))
    return found


def _first_part(expr: ast.expr) -> ast.expr | None:
    """The part a built path starts with: `join`'s or `Path`'s first argument, an f-string's first value, the
    left of `a / b` or `a + b`."""
    if isinstance(expr, ast.Call):
        return expr.args[0] if expr.args else None
    if isinstance(expr, ast.JoinedStr):
        head = expr.values[0] if expr.values else None
        return head.value if isinstance(head, ast.FormattedValue) else None
    return expr.left if isinstance(expr, ast.BinOp) else None
