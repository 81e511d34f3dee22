"""draccus and pyrallis, its origin: `@draccus.wrap()` over `main(cfg: Config)` or `draccus.parse(Config)`, and a
project's own wrapper of it (`@parser.wrap()` from a module that imports draccus). One flag per dataclass field
by its dotted path from the root (`--steps`, `--dataset.repo_id`, `--policy.push_to_hub`), written `--key=value`
or `--key value`, booleans as `--key=false`; `--config_path` names a file of values. A field typed with a
`ChoiceRegistry` class takes `--policy.type=act`, then that choice's own fields, which are not read here
(unknown, not refused). draccus exits on any other key."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Fact
from ..lengths import length_control
from ..nodes import walk
from .base import Refusal, Verdict, documented, flag_name
from .modules import Classes, annotated, classes_of, fields, imported_files, parsed
from .signature import Signature

CHOICE = "type"  # the key that picks a ChoiceRegistry's class: `--policy.type=act`
UPLOAD = re.compile(r"^(push|upload)(_|$)|_to_hub$")  # a switch that publishes what the run made


def _root_class(tree: ast.Module) -> str | None:
    """The config class of `@x.wrap()` over `def main(cfg: Config)`, or of `draccus.parse(config_class=Config)`."""
    for node in walk(tree):
        if isinstance(node, ast.FunctionDef) and node.args.args and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute | ast.Name)
                and (d.func.attr if isinstance(d.func, ast.Attribute) else d.func.id) == "wrap"
                for d in node.decorator_list):
            names = annotated(node.args.args[0].annotation)
            if names:
                return names[0]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "parse" \
                and ast.unparse(node.func).endswith(tuple(f"{p}.parse" for p in PARSERS)):
            given = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "config_class")]
            if given and isinstance(given[0], ast.Name):
                return given[0].id
    return None


PARSERS = ("draccus", "pyrallis")  # pyrallis, draccus's origin, reads a command the same way (no choice types)


def _imports_draccus(tree: ast.Module) -> bool:
    return any(isinstance(n, ast.Import) and any(a.name in PARSERS for a in n.names)
               or isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in PARSERS for n in walk(tree))


def _choices(name: str, classes: Classes, prefix: str = "", depth: int = 0) -> list[str]:
    """The dotted sections of `name` typed with a `ChoiceRegistry` class (`policy`): a `.type` picks the class."""
    found: list[str] = []
    node, _ = classes[name]
    for s in (x for x in node.body if isinstance(x, ast.AnnAssign) and isinstance(x.target, ast.Name)):
        nested = next((c for c in annotated(s.annotation) if c in classes), None)
        if nested is None or depth >= 6:
            continue
        key = prefix + s.target.id  # type: ignore[union-attr]
        if any(ast.unparse(b).endswith("ChoiceRegistry") for b in classes[nested][0].bases):
            found.append(key)
        found += _choices(nested, classes, key + ".", depth + 1)
    return found


class Draccus(Signature):
    def __init__(self) -> None:
        super().__init__("draccus")

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system in ("unknown", "constants") and _root_class(tree) is not None

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        if not _imports_draccus(tree) and not any(_imports_draccus(parsed(p))
                                                  for p in imported_files(tree, rel, find, depth=2)):
            return False
        name = _root_class(tree)
        classes = classes_of(tree, rel, root, find)
        if name is None or name not in classes:
            return False
        for key, f, where in fields(name, classes):
            default = ast.unparse(f.value)[:80] if f.value is not None else None
            a.flags[f"--{key}"] = default
            if UPLOAD.search(key.split(".")[-1]) and default == "True":  # `push_to_hub: bool = True`
                a.uploads.append(Fact(name=key, file=where, line=f.lineno, off_switch=f"--{key}=false"))
            if control := length_control(f"--{key}", default, where, f.lineno):
                a.step_controls.append(control)
        for section in _choices(name, classes):
            a.flags[f"--{section}.{CHOICE}"] = None
        a.flags.setdefault("--config_path", None)
        return True

    def known(self, a: Analysis, name: str, given: Sequence[str]) -> Verdict:
        if name in a.flags:
            return "proven"
        if any(name.startswith(f.removesuffix(CHOICE)) for f in a.flags if f.endswith(f".{CHOICE}")):
            return documented(name, given)  # a field of the class a `.type` picks: not read
        return "refused"

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        verdicts = {flag_name(w): self.accepts(a, w, given) for w in args if w.startswith("--")}
        return ([f"{f} is not a field of {name}'s draccus config" for f, v in verdicts.items() if v == "refused"],
                [f"{f}: a field of the class its choice picks, not read, so not proven ({name})"
                 for f, v in verdicts.items() if v == "unknown"])


SYSTEMS = (Draccus(),)
