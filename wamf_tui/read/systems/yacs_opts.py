"""yacs (`CfgNode`) with an opts list: argparse reads its own flags, then `cfg.merge_from_list(args.opts)`
takes the rest as `KEY VALUE` pairs (no dashes, no `=`), after `--opts` or as a positional `opts`
(`nargs=REMAINDER`). A key must exist in the defaults (`_C.SOLVER.MAX_ITER = 40000` in the module the entry
imports); an unknown one raises, so the keys read from those defaults are the whole set."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Fact
from ..lengths import length_control
from .argparser import Argparse
from .base import Kind, Refusal, Verdict
from .modules import imported_files, named_file, parsed, yaml_leaves

NODES = ("CN", "CfgNode")  # the call that makes a config node
OPTS = ("opts", "--opts")
# iteration counts only: an epoch count would cut whole epochs (the wrapper caps steps inside one)
OUTPUT = re.compile(r"^(OUTPUT|OUT|SAVE|LOG|CHECKPOINT|CKPT)_?(DIR|PATH)$")


def _call_name(node: ast.AST) -> str:
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _dotted(node: ast.expr) -> list[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return [node.id, *parts] if isinstance(node, ast.Name) else []


def defaults(tree: ast.Module) -> dict[str, tuple[str, int]]:
    """Every key of the config nodes a module builds (`_C = CN()`; `_C.MODEL.DEVICE = "cuda"`), with its
    default as written and its line; a key set to another node is a node, not a key."""
    roots = {t.id for n in tree.body if isinstance(n, ast.Assign) and _call_name(n.value) in NODES
             for t in n.targets if isinstance(t, ast.Name)}
    keys: dict[str, tuple[str, int]] = {}
    for n in tree.body:
        if not isinstance(n, ast.Assign) or _call_name(n.value) in NODES:
            continue
        for t in n.targets:
            parts = _dotted(t)
            if len(parts) > 1 and parts[0] in roots:
                keys[".".join(parts[1:])] = (ast.unparse(n.value)[:80], n.lineno)
    return keys


class Yacs(Argparse):
    kind: Kind = "yacs"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        """An opts argument of the entry's argparse (its `merge_from_list` may sit in a module it imports)."""
        return a.config_system == "argparse" and any(o in a.flags for o in OPTS)

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        found = False
        for path in imported_files(tree, rel, find, depth=3):  # detectron2: config/__init__ -> config -> defaults
            module = parsed(path)
            keys = defaults(module)
            if not keys:
                continue
            found = True
            where = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
            for key, (default, line) in keys.items():
                a.flags.setdefault(key, default)
                if OUTPUT.match(key.split(".")[-1]):  # where it writes: the run line may point it elsewhere
                    a.output_dirs.append(Fact(name=key, off_switch=key, file=where, line=line))
                if control := length_control(key, default, where, line):
                    a.step_controls.insert(0, control)
        files = [f for f in a.flags if f.startswith("-") and ("config" in f or "cfg" in f)]
        named = named_file(command, root, files) if found else None
        if named is not None:  # `cfg.merge_from_file(args.config_file)`: its values over the defaults
            a.resolved.update({k: v for k, v in yaml_leaves(*named).items() if k in a.flags})
        return found

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if word.startswith("-"):
            return super().accepts(a, word, given)
        return "proven" if word in a.flags else "refused"  # merge_from_list raises on a key it lacks

    def settable(self, a: Analysis, setting: str) -> bool:
        return setting.startswith("--") or setting in a.flags

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        return super().render(a, setting, value) if setting.startswith("-") else [setting, str(value)]

    def groups(self, words: Sequence[str]) -> list[list[str]]:
        """Dashed flags with their values, and `KEY VALUE` pairs (a value may start with a dash: `-1`)."""
        out: list[list[str]] = []
        for w in words:
            if out and not out[-1][0].startswith("-") and len(out[-1]) == 1:
                out[-1].append(w)
            elif w.startswith("-") or not out or not out[-1][0].startswith("-"):
                out.append([w])
            else:
                out[-1].append(w)
        return out

    def split(self, a: Analysis, args: Sequence[str]) -> tuple[list[str], list[str]]:
        """The command's words before its opts list, and the `KEY VALUE` words of it."""
        if "--opts" in args:
            i = list(args).index("--opts")
            return list(args[:i]), list(args[i + 1:])
        if "--opts" in a.flags:
            return list(args), []
        last = max((i for i, w in enumerate(args) if w.startswith("-")), default=-1)
        if last >= 0 and "=" not in args[last] and a.flags.get(args[last].split("=")[0]) not in ("False", "True"):
            last += 1  # the flag's value
        return list(args[:last + 1]), list(args[last + 1:])

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        head, pairs = self.split(a, args)
        return {**super().values(a, head), **dict(zip(pairs[::2], pairs[1::2], strict=False))}

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        head, pairs = self.split(a, args)
        problems, doubts = super().refusal(a, head, name, given)
        if len(pairs) % 2:
            problems.append(f"the opts list of {name} takes KEY VALUE pairs; {pairs[-1]} has no value")
        problems += [f"{k} is not a key of {name}'s config defaults" for k in pairs[::2] if k not in a.flags]
        return problems, doubts

    def line(self, a: Analysis, args: Sequence[str], added: Sequence[str]) -> list[str]:
        head, pairs = self.split(a, args)
        flags = [w for g in self.groups(added) if g[0].startswith("-") for w in g]
        more = [w for g in self.groups(added) if not g[0].startswith("-") for w in g]
        marker = ["--opts"] if "--opts" in a.flags and (pairs or more) else []
        return [*head, *flags, *marker, *pairs, *more]


SYSTEMS = (Yacs(),)
