"""absl flags with an ml_collections config: `config_flags.DEFINE_config_file("config")` takes
`--config=path/to/cfg.py` (its `get_config()` builds the ConfigDict) and then `--config.training.n_iters=30`
overrides; a key not in that config is an error. The keys are read from the config file the job's command
names (and the functions it builds on), so they are proven for that file only; without one, unproven."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis
from ..nodes import walk
from .base import Refusal, Verdict, documented, flag_name
from .modules import called, imports, parsed
from .signature import Options

NODES = ("ConfigDict", "FieldReference")  # a ConfigDict node; a reference is a leaf
BUILDER = "get_config"


def _path(node: ast.expr) -> list[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return [node.id, *parts] if isinstance(node, ast.Name) else []


def config_keys(file: Path, rel: str, find: Callable[[str], Path | None], function: str = BUILDER,
                depth: int = 0) -> dict[str, str]:
    """Every leaf key the config function builds (`config.training.n_iters = 1300001`, or through an alias:
    `config.training = training = ConfigDict(); training.n_iters = ...`), with its value as written; a
    config built on another function (`config = get_default_configs()`) has that one's keys first."""
    tree = parsed(file)
    made = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)
    if made is None or depth > 3:
        return {}
    keys: dict[str, str] = {}
    aliases: dict[str, list[str]] = {}
    for stmt in (s for s in ast.walk(made) if isinstance(s, ast.Assign)):
        value = stmt.value
        paths = [_path(t) for t in stmt.targets]
        where = [aliases[p[0]] + p[1:] for p in paths if p and p[0] in aliases]
        if isinstance(value, ast.Call) and called(value) not in NODES and isinstance(value.func, ast.Name):
            keys.update(_built_on(tree, file, rel, find, value.func.id, depth))  # `config = get_default_configs()`
        if isinstance(value, ast.Call) and (called(value) in NODES[:1] or isinstance(value.func, ast.Name)):
            for p in paths:  # a node: every plain name it is also given is an alias of its path
                if len(p) == 1:
                    aliases[p[0]] = where[0] if where else []
            continue
        if isinstance(value, ast.Attribute) and (source := _path(value)) and source[0] in aliases:
            for p in (p for p in paths if len(p) == 1):  # `training = config.training`
                aliases[p[0]] = aliases[source[0]] + source[1:]
            continue
        for key in where:
            if key:
                keys[".".join(key)] = ast.unparse(value)[:80]
    return keys


def _built_on(tree: ast.Module, file: Path, rel: str, find: Callable[[str], Path | None], name: str,
              depth: int) -> dict[str, str]:
    """The keys of the config function `name` this file defines or imports from a repo module."""
    if any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body):
        return config_keys(file, rel, find, name, depth + 1)
    for n in (x for x in tree.body if isinstance(x, ast.ImportFrom)):
        if any(a.name == name for a in n.names):
            module = next((m for m in imports(ast.Module(body=[n], type_ignores=[]), rel)), "")
            path = find(module)
            if path is not None:
                return config_keys(path, module.replace(".", "/") + ".py", find, name, depth + 1)
    return {}


def _named(command: Sequence[str], flag: str) -> str | None:
    """The file the command gives `--config` (`--config=configs/x.py:arg` or `--config configs/x.py`)."""
    for i, word in enumerate(command):
        name, eq, value = word.partition("=")
        if name == flag:
            value = value if eq else command[i + 1] if i + 1 < len(command) else ""
            return value.split(":")[0] or None
    return None


class MlCollections(Options):
    def __init__(self) -> None:
        super().__init__("ml_collections", negation=("__no_", "__no"))

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system == "absl" and any(called(n) == "DEFINE_config_file" for n in walk(tree))

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        for call in (n for n in walk(tree) if isinstance(n, ast.Call) and called(n) == "DEFINE_config_file"):
            first = call.args[0] if call.args else None
            flag = f"--{first.value}" if isinstance(first, ast.Constant) and isinstance(first.value, str) \
                else "--config"
            a.flags.setdefault(flag, None)
            named = _named(command, flag)
            file = root / named if named else None
            if file is None or not file.is_file():
                continue
            for key, value in config_keys(file, named or "", find).items():
                a.flags[f"{flag}.{key}"] = value
        return True

    def _config(self, a: Analysis, name: str) -> str | None:
        """The config flag `name` overrides (`--config.training.n_iters` -> `--config`), if it is one."""
        head = name.split(".")[0]
        return head if "." in name and head in a.flags and not head.startswith("--no") else None

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        name = flag_name(word)
        head = self._config(a, name) if word.startswith("--") else None
        if head is None:
            return super().accepts(a, word, given)
        if name in a.flags:
            return "proven"
        read = any(f.startswith(f"{head}.") for f in a.flags)  # from the config file the command names
        return "refused" if read else documented(name, given)

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        overrides = [w for w in args if w.startswith("--") and self._config(a, flag_name(w))]
        problems, doubts = super().refusal(a, [w for w in args if w not in overrides], name, given)
        verdicts = [(flag_name(w), self.accepts(a, w, given)) for w in overrides]
        problems += [f"{f} is not a key of the config {name} is given" for f, v in verdicts if v == "refused"]
        doubts += [f"{f}: the config file it overrides was not read, so not proven" for f, v in verdicts
                   if v == "unknown"]
        return problems, doubts


SYSTEMS = (MlCollections(),)
