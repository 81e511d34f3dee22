"""simple_parsing: `simple_parsing.parse(Config)` or `ArgumentParser().add_arguments(Config, dest="cfg")`
makes one flag per dataclass field (`--ctx_len`), a nested dataclass's fields flattened (`--k`, prefixed
`--sae.k` only where two groups share a name); a bool also takes `--flag false` and `--noflag`; a field with
`positional=True` is a positional. It parses with argparse, so an unknown flag exits 2."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Fact
from ..lengths import length_control
from ..nodes import of_type, walk
from .modules import called, classes_of, fields
from .signature import Signature

OUTPUT = re.compile(r"^(save_dir|output_dir|out_dir|log_dir|checkpoint_dir|ckpt_dir|work_dir)$")


def _positional(field: ast.AnnAssign) -> bool:
    return isinstance(field.value, ast.Call) and any(
        k.arg == "positional" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in field.value.keywords)


class SimpleParsing(Signature):
    def __init__(self) -> None:
        super().__init__("simple_parsing", negation=("__no",))

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        imported = any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("simple_parsing")
                       or isinstance(n, ast.Import) and any(x.name == "simple_parsing" for x in n.names)
                       for n in of_type(tree, ast.Import, ast.ImportFrom))
        return imported and a.config_system in ("unknown", "constants", "argparse")

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        classes = classes_of(tree, rel, root, find)
        made = [n.args[0].id for n in walk(tree) if isinstance(n, ast.Call) and called(n) in (
            "parse", "add_arguments", "parse_known_args") and n.args and isinstance(n.args[0], ast.Name)
            and n.args[0].id in classes]
        read = [(key, f, where) for name in made for key, f, where in fields(name, classes) if not _positional(f)]
        leaves = [key.split(".")[-1] for key, _, _ in read]
        for key, f, where in read:
            leaf = key.split(".")[-1]
            flag = f"--{leaf}" if leaves.count(leaf) == 1 else f"--{key}"
            default = ast.unparse(f.value)[:80] if f.value is not None else None
            a.flags[flag] = default
            if control := length_control(flag, default, where, f.lineno):
                a.step_controls.insert(0, control)
            if OUTPUT.match(leaf):
                a.output_dirs.append(Fact(name=flag, off_switch=flag, file=where, line=f.lineno))
        return bool(read)


SYSTEMS = (SimpleParsing(),)
