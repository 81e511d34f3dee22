"""Which module a console script's subcommand runs: `tool pretrain ...` trains in `pkg/pretrain.py`.

A repo's console script is usually a dispatcher (`litgpt pretrain`, `tool train config.yml`); the
training loop lives in the module its subcommand table points to. The tables are read in the
idioms CLIs use: a dict of name to function (jsonargparse `CLI({...})`, hand-written tables),
argparse `add_parser("x")` with `set_defaults(func=f)`, click and typer `@group.command()` and
`add_command(f, "x")`, and `if args.cmd == "x": f()`. A function defined in the dispatcher itself
leads to the repo module it imports and calls. A subcommand argument that names a script of the
repo (`tune run full_finetune` with `recipes/full_finetune.py`) is that script. Pure: reads text.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ..infra.files import read_text
from ..model import LaunchCommand
from .nodes import walk
from .step import name_of

_COMMAND_DECORATORS = ("command", "group")
MAX_BYTES = 256 * 1024  # a dispatcher is a small file; a larger one is not read
_RUNS = ("run", "launch", "train", "exec", "start")  # subcommands whose argument is what runs


def refine_console(launch: LaunchCommand, read: Callable[[str], str | None], exists: Callable[[str], bool],
                   scripts: Iterable[str]) -> None:
    """Point a console-script launch at the module its subcommand runs (`launch.path`), when the
    dispatcher's table says; the command itself is unchanged. `read(path)` gives a repo file's text,
    `exists(path)` whether it is a file; `scripts` are the repo's Python files a name may point to."""
    words = dispatch(launch)
    if not words or not launch.path:
        return
    text = read(launch.path)
    if text is None:
        return
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    target, function = _target(tree, words[0], exists, launch.path)
    if target is None and len(words) > 1 and words[0] in _RUNS:  # `tune run RECIPE`: a script of the repo
        target = _script_named(words[1], scripts)
    if target and target != launch.path:
        launch.path = target
        # jsonargparse's `CLI({...})` and fire's `Fire({...})` make the subcommand's flags from its parameters
        cli = _signature_cli(tree) if function else ""
        launch.function, launch.function_cli = (function, cli) if cli else (None, "")


def called(launch: LaunchCommand | None) -> tuple[str, str] | None:
    """(the CLI, the function) a console script's dispatcher makes the entry's flags from, for the reader."""
    return (launch.function_cli, launch.function) if launch and launch.function and launch.function_cli else None


def served_by(consoles: Mapping[str, str], entry: str, read: Callable[[str], str | None],
              exists: Callable[[str], bool]) -> tuple[str, str] | None:
    """(the CLI, the function) when a console script's dispatcher maps a subcommand to a function of `entry`
    (litgpt's `pretrain` to `setup` of litgpt/pretrain.py): the entry's flags are that function's parameters,
    whatever command runs it; None when no dispatcher does."""
    for target in consoles.values():
        here = module_file(target.split(":")[0], exists)
        text = read(here) if here else None
        if here is None or text is None:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            continue
        cli = _signature_cli(tree)
        subs = {k.value for n in walk(tree) if isinstance(n, ast.Dict) for k in n.keys
                if isinstance(k, ast.Constant) and isinstance(k.value, str)} if cli else set()
        for sub in sorted(subs):
            path, function = _target(tree, sub, exists, here)
            if path == entry and function:
                return cli, function
    return None


def dispatch(launch: LaunchCommand) -> list[str]:
    """The words a console script dispatches on (`pretrain`, or `run RECIPE`); [] for any other launch."""
    if launch.launcher != "console script" or not launch.entry or not launch.args or launch.args[0].startswith("-"):
        return []
    return [w for w in launch.args if not w.startswith("-")][:2]


def reader(root: Path) -> Callable[[str], str | None]:
    """`read` for `refine_console`: a repo file's text, None when it is unreadable or too large."""
    def read(rel: str) -> str | None:
        try:
            return read_text(root / rel, MAX_BYTES)
        except (OSError, ValueError):
            return None
    return read


def module_file(module: str, exists: Callable[[str], bool]) -> str | None:
    """The repo file of a dotted module name, from the root or a src/ layout."""
    name = module.replace(".", "/")
    for cand in (f"{name}.py", f"{name}/__init__.py", f"src/{name}.py", f"src/{name}/__init__.py"):
        if exists(cand):
            return cand
    return None


def _script_named(word: str, scripts: Iterable[str]) -> str | None:
    """The one script of the repo named `word` (a recipe name), outside the tests."""
    stem = posixpath.basename(word.removesuffix(".py"))
    if not stem.replace("_", "").replace("-", "").isalnum():
        return None
    found = {f for f in scripts if posixpath.basename(f) == f"{stem}.py" and not f.startswith("test")}
    return found.pop() if len(found) == 1 else None


def _signature_cli(tree: ast.Module) -> str:
    """`jsonargparse CLI` or `fire` when the dispatcher hands its table to jsonargparse's `CLI` or fire's
    `Fire` (they make a function's flags from its parameters); "" otherwise."""
    imported = {m for m, _ in _imports(tree).values()}
    for n in walk(tree):
        last = name_of(n.func).split(".")[-1] if isinstance(n, ast.Call) else ""
        if last == "CLI" and "jsonargparse" in imported:
            return "jsonargparse"
        if last == "Fire" and "fire" in imported:
            return "fire"
    return ""


def _target(tree: ast.Module, sub: str, exists: Callable[[str], bool], here: str) -> tuple[str | None, str | None]:
    """The repo module the subcommand `sub` runs, from the syntax tree of the dispatcher at `here`, and the
    function of it the table names (None when the table names a module or a function of the dispatcher)."""
    def find(module: str) -> str | None:
        return module_file(module, exists)
    imports = _imports(tree)
    names = {sub, sub.replace("-", "_"), sub.replace("_", "-")}
    node = _table_value(tree, names)
    if node is None:
        return None, None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # `{"train": "pkg.train"}`
        return find(node.value.split(":")[0]), None
    name = name_of(node)
    head = name.split(".")[0]
    if head in imports:
        module, attr = imports[head]
        # `from pkg.pretrain import setup`: the module is pkg/pretrain.py, the function `setup`
        path, rest = _longest(find, ".".join([module, *([attr] if attr else []), *name.split(".")[1:]]))
        return path, rest[0] if len(rest) == 1 else None
    local = _functions(tree).get(name)
    if local is None:
        return None, None
    # a function of the dispatcher: the module it calls named for the subcommand, one named so beside
    # the dispatcher, or the first repo module it calls
    called = _called_modules(local, imports, find)
    beside = posixpath.join(posixpath.dirname(here), f"{sub.replace('-', '_')}.py")
    named = [m for m in called if posixpath.basename(m).removesuffix(".py") in names]
    return next(iter(named or ([beside] if exists(beside) else []) or called), None), None


def _table_value(tree: ast.Module, names: set[str]) -> ast.AST | None:
    """What the dispatcher maps the subcommand to, in the first idiom that names it."""
    parsers: dict[str, str] = {}  # variable -> subcommand, for `p = sub.add_parser("x")`
    for node in walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in names:
                    return value
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) \
                and name_of(node.value.func).endswith("add_parser") and _first_str(node.value) in names:
            for t in node.targets:
                if isinstance(t, ast.Name):
                    parsers[t.id] = _first_str(node.value) or ""
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in node.decorator_list:
                call = d if isinstance(d, ast.Call) else None
                if name_of(d).split(".")[-1] not in _COMMAND_DECORATORS:
                    continue
                given = (_first_str(call) or _name_kw(call)) if call else None
                if (given or node.name) in names:
                    return ast.Name(id=node.name)
        if isinstance(node, ast.Call) and name_of(node.func).split(".")[-1] in ("add_command", "add_typer") \
                and node.args:
            given = _first_str(node, 1) or _name_kw(node)
            if given in names or given is None and name_of(node.args[0]).split(".")[-1] in names:
                return node.args[0]
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1 \
                and isinstance(node.test.ops[0], ast.Eq):
            sides = [node.test.left, node.test.comparators[0]]
            if any(isinstance(s, ast.Constant) and s.value in names for s in sides):
                call = next((n for s in node.body for n in ast.walk(s) if isinstance(n, ast.Call)), None)
                if call is not None:
                    return call.func
    for node in walk(tree):  # `p.set_defaults(func=f)` on a parser made for the subcommand
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set_defaults" \
                and name_of(node.func.value) in parsers:
            for k in node.keywords:
                if k.arg in ("func", "handler", "command", "fn", "main"):
                    return k.value
    return None


def _longest(find: Callable[[str], str | None], dotted: str) -> tuple[str | None, list[str]]:
    """The file of the longest leading part of `pkg.mod.func` that is a module of the repo, and the names
    after it (`["func"]`)."""
    parts = dotted.split(".")
    return next(((f, parts[n:]) for n in range(len(parts), 0, -1) if (f := find(".".join(parts[:n])))),
                (None, []))


def _first_str(call: ast.Call | None, index: int = 0) -> str | None:
    if call is None or len(call.args) <= index:
        return None
    arg = call.args[index]
    return arg.value if isinstance(arg, ast.Constant) and isinstance(arg.value, str) else None


def _name_kw(call: ast.Call) -> str | None:
    """The `name="x"` a command is registered under."""
    return next((k.value.value for k in call.keywords if k.arg == "name" and isinstance(k.value, ast.Constant)
                 and isinstance(k.value.value, str)), None)


def _imports(tree: ast.AST) -> dict[str, tuple[str, str]]:
    """Local name -> (module, attribute) for every absolute import in `tree`, at any depth."""
    found: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                found[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.Import):
            for a in node.names:
                found[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], "")
    return found


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def _called_modules(fn: ast.FunctionDef | ast.AsyncFunctionDef, imports: dict[str, tuple[str, str]],
                    find: Callable[[str], str | None]) -> list[str]:
    """The repo modules a dispatcher's own function calls into, in order: through an import inside it
    (`from pkg.train import do_cli`) or a module-level one."""
    known = {**imports, **_imports(fn)}
    found: list[str] = []
    for node in sorted((n for n in ast.walk(fn) if isinstance(n, ast.Call)), key=lambda n: (n.lineno, n.col_offset)):
        head = name_of(node.func).split(".")[0]
        if head in known:
            module, attr = known[head]
            path = _longest(find, ".".join([module, *([attr] if attr else []), *name_of(node.func).split(".")[1:]]))[0]
            if path and path not in found:
                found.append(path)
    return found
