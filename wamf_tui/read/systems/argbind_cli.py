"""argbind: each function bound with `argbind.bind` (a decorator, or `X = argbind.bind(fn, "train", ...)`)
takes its keyword parameters from the command line as `--Func.param`, as `--param` where it is bound
`without_prefix=True`, and a scoped copy as `--scope/Func.param`. `--args.load FILE.yml` sets any of them by
the same keys, the files its `$include` list names first; a flag the command types wins. The parser is
argparse made from the bound signatures, so an unknown flag exits 2, and an abbreviated one parses but is not
seen as typed (the file's value wins): only exact names are proven."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Fact, Resolved
from ..nodes import of_type
from .base import Kind, Refusal, Verdict, documented, flag_name
from .common import Dashed
from .modules import named_file, yaml_leaves

ARGS = ("--args.load", "--args.save", "--args.debug")
OUTPUT = re.compile(r"^(save_path|save_dir|output_dir|out_dir|log_dir|checkpoint_dir|ckpt_dir|work_dir)$")
MAX_INCLUDES = 16


def _bind(node: ast.expr) -> ast.Call | None:
    """The `argbind.bind(...)` call `node` is (as a decorator, with or without arguments), else None."""
    call = node if isinstance(node, ast.Call) else ast.Call(func=node, args=[], keywords=[])
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name != "bind" or isinstance(func, ast.Attribute) and not (
            isinstance(func.value, ast.Name) and func.value.id == "argbind"):
        return None
    return call


def _bare(call: ast.Call) -> bool:
    return any(k.arg == "without_prefix" and isinstance(k.value, ast.Constant) and k.value.value is True
               for k in call.keywords)


def _keywords(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[tuple[str, ast.expr, int]]:
    """(name, default, line) of each parameter with a default: argbind binds those."""
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults, strict=True))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return [(a.arg, d, a.lineno) for a, d in pairs]


class Argbind(Dashed):
    kind: Kind = "argbind"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system in ("unknown", "constants", "argparse") and any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "parse_args"
            and isinstance(n.func.value, ast.Name) and n.func.value.id == "argbind" for n in of_type(tree, ast.Call))

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        bound: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef | None, bool]] = []
        for fn in functions.values():
            call = next((c for c in map(_bind, fn.decorator_list) if c is not None), None)
            if call is not None:
                bound.append((fn.name, fn, _bare(call)))
        for node in tree.body:  # `DAC = argbind.bind(dac.model.DAC)`: its parameters live in a library
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                call = _bind(node.value)
                if call is not None and call.args:
                    target = call.args[0]
                    bound.append((node.targets[0].id, functions.get(target.id) if isinstance(
                        target, ast.Name) else None, _bare(call)))
        a.flags.update({flag: None for flag in ARGS})
        for name, defined, bare in bound:
            if defined is None:
                continue  # its `--Name.param` flags are unknown here, never refused
            for param, default, line in _keywords(defined):
                flag = f"--{param}" if bare else f"--{name}.{param}"
                a.flags[flag] = ast.unparse(default)[:80]
                if OUTPUT.match(param):
                    a.output_dirs.append(Fact(name=flag, off_switch=flag, file=rel, line=line))
        named = named_file(command, root, ["--args.load"])
        if named is not None:
            a.resolved.update(_loaded(*named, root))
        return bool(bound)

    def known(self, a: Analysis, name: str, given: Sequence[str]) -> Verdict:
        bare = name.split("/", 1)[1] if "/" in name else name[2:]  # `--train/AudioDataset.duration`
        if f"--{bare}" in a.flags:
            return "proven"
        if "." in bare and not any(f.startswith(f"--{bare.split('.')[0]}.") for f in a.flags):
            return documented(name, given)  # a function bound from a library: its parameters are not read
        return "refused"

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if not word.startswith("-"):
            return "unknown"
        return self.known(a, flag_name(word), given)

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        words = [flag_name(w) for w in args if w.startswith("--")]
        refused = [f"{w} is not a parameter of a function {name} binds with argbind" for w in words
                   if self.known(a, w, given) == "refused"]
        unproven = [w for w in words if self.known(a, w, given) == "unknown"]
        return refused, ([f"{', '.join(unproven)}: bound from a library argbind wraps, so not proven ({name})"]
                         if unproven else [])


def _loaded(path: Path, rel: str, root: Path) -> dict[str, Resolved]:
    """The settings an `--args.load` file sets, by flag, its `$include`s first (a later file wins)."""
    import yaml  # PyYAML: a dependency of the app, imported where a YAML config is read

    out: dict[str, Resolved] = {}
    todo, seen = [(path, rel)], set[Path]()
    files: list[tuple[Path, str]] = []
    while todo and len(seen) < MAX_INCLUDES:
        at, name = todo.pop()
        if at in seen:
            continue
        seen.add(at)
        files.insert(0, (at, name))
        try:
            text = yaml.safe_load(at.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
            continue
        includes = text.get("$include", []) if isinstance(text, dict) else []
        todo += [(root / i, i) for i in includes if isinstance(i, str) and (root / i).is_file()]
    for at, name in files:
        out.update({f"--{k}": v for k, v in yaml_leaves(at, name).items() if not k.startswith("$include")})
    return out


SYSTEMS = (Argbind(),)
