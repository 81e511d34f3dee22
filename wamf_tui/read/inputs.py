"""Inputs a job needs although its parser declares none required, read from how the code that runs
uses its settings at their defaults.

A parser can take a command without `--data-dir` and the job still cannot train: the value left at
`None` is handed to the dataset as its root, or an `if/elif/else` over the data settings ends in a
`raise`. These are required inputs as surely as `required=True`: asked for by name (never invented),
and a run line without them is refused.
"""

from __future__ import annotations

import ast
import glob
import os
import posixpath
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..model import Fact, Required
from .nodes import walk
from .values import Values, defaults, dest, setting, settings_objects, settings_read, truth

# Keywords a dataset or loader takes its data folder or file by: a None there reads nothing or crashes.
# Calls that fail on a None path: the folder a job writes to, or a file it opens.
PATH_CALLS = frozenset({"os.path.join", "Path", "pathlib.Path", "os.makedirs", "os.mkdir", "open"})
OUTPUT_WORDS = re.compile(r"(^|_)(out|output|save|ckpt|checkpoint|log|logs|logging)(_|$)|^outf$")
DATA_KEYWORDS = frozenset({"root", "root_dir", "data_dir", "data_root", "data_path", "dataset_path", "data_folder",
                           "train_dir", "train_data_dir", "train_file", "data_files"})


def required_by_use(tree: ast.Module, rel: str, flags: Mapping[str, str | None], loads: bool = False) -> list[Required]:
    """The inputs the entry's reached code needs with every setting at its default (`flags`: the
    parser's options and their defaults as written). `loads`: its settings also come from a config file
    its command names, which may set any the reading does not know: none of those is then taken as unset."""
    values = defaults(flags, settings_objects(tree))
    spelled = {dest(f): f for f in flags if f.startswith("-")}
    bodies = list(_reached_bodies(tree))
    found: dict[str, Required] = {}
    for stmt in (s for body in bodies for s in _straight(body)):
        for names in _raised_for(stmt, values, loads):
            _add(found, names, spelled, rel, stmt.lineno)
    aliases = _aliases(bodies, values)
    for stmt in (s for body in bodies for s in _straight(body)):
        for call in (n for part in _own(stmt) for n in ast.walk(part) if isinstance(n, ast.Call)):
            for kw in call.keywords:
                if kw.arg in DATA_KEYWORDS and (names := _fed_by(kw.value, values, aliases)) \
                        and all(values.get(n, 0) is None for n in names):
                    _add(found, names, spelled, rel, call.lineno)
    return list(found.values())


def paths_needed(tree: ast.Module, rel: str, flags: Mapping[str, str | None],
                 dead: Mapping[int, str]) -> list[Required]:
    """Settings left at None that reached code builds a path from with no test of them first
    (`os.path.join(args.output_dir, "best")` at each epoch's end): a TypeError there. An output folder
    (`kind="output"`) the benchmark gives its own run folder; any other path is an input to ask for.
    `dead`: the lines the job's values never reach."""
    values = defaults(flags, settings_objects(tree))
    spelled = {dest(f): f for f in flags if f.startswith("-")}
    found: dict[str, Required] = {}
    for body in _reached_bodies(tree):
        for call, guards in _calls_under(body, []):
            if _dotted(call.func) not in PATH_CALLS or not call.args or call.lineno in dead:
                continue
            name = setting(call.args[0], values)
            if name is None or values[name] is not None or any(name in settings_read(g, values) for g in guards):
                continue
            flag = spelled.get(name, f"--{name}")
            found.setdefault(flag, Required(name=flag, kind="output" if OUTPUT_WORDS.search(name) else "option",
                                            file=rel, line=call.lineno))
    return list(found.values())


# Calls that read the file their first argument names (`open` only when its mode reads).
READERS = frozenset({"open", "np.load", "numpy.load", "np.memmap", "numpy.memmap", "np.loadtxt", "torch.load",
                     "pd.read_csv", "pandas.read_csv", "pd.read_parquet", "pandas.read_parquet"})


def files_read(tree: ast.Module, rel: str, root: Path) -> list[Required]:
    """Files the reached code reads by a fixed relative path (`open('input.txt')`) that are on this machine
    neither from the repo root, where the job runs, nor from the script's folder: no setting moves them, so
    the user must say where they are. A name the module also names elsewhere (an existence test, a
    download to it) is left alone: the job may make the file itself."""
    counts: dict[str, int] = {}
    for node in walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            counts[node.value] = counts.get(node.value, 0) + 1
    found: dict[str, Required] = {}
    for body in _reached_bodies(tree):
        for call, _ in _calls_under(body, []):
            path = _read_path(call)
            if path is None or counts.get(path, 0) > 1 or path in found:
                continue
            if not any((folder / path).exists() for folder in (root, root / posixpath.dirname(rel))):
                found[path] = Required(name=path, kind="file", file=rel, line=call.lineno)
    return list(found.values())


# Calls that list or test paths: what they name is read from the folder the job runs in too.
LISTERS = frozenset({"glob.glob", "glob", "os.listdir", "os.path.exists", "os.path.isfile", "os.path.isdir"})
_RELATIVE = re.compile(r"(?!/|~|\$|\{)(?:\./|\.\./)?[\w.*-]+(?:/[\w.*{}-]*)*")


def cwd_reads(tree: ast.Module, rel: str) -> tuple[list[Fact], list[Fact]]:
    """(reads, downloads) by a literal path relative to the folder the job runs in: files opened, loaded, listed
    or tested (`open('input.txt')`, `glob.glob('data/*.bin')`), a folder put on `sys.path` to import from; and
    dataset folders it downloads into (`CIFAR10(root='./data', download=True)`) or caches into
    (`load_dataset(..., cache_dir='./data/')`), a write of that folder. Anywhere in the module, reached or not:
    a read that might run keeps the job in its own folder."""
    reads: list[Fact] = []
    downloads: list[Fact] = []
    strings = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
               and isinstance(n.value.value, str) for t in n.targets if isinstance(t, ast.Name)}
    for call in (n for n in walk(tree) if isinstance(n, ast.Call)):
        name = _dotted(call.func)
        if name in ("sys.path.insert", "sys.path.append") and call.args:  # `sys.path.insert(0, './SentEval')`
            arg = call.args[-1]
            folder = arg.value if isinstance(arg, ast.Constant) else strings.get(arg.id) \
                if isinstance(arg, ast.Name) else None
            if isinstance(folder, str) and _RELATIVE.fullmatch(folder) and folder.strip("./"):
                reads.append(Fact(name=folder, file=rel, line=call.lineno))
            continue
        fetches = any(k.arg == "download" and isinstance(k.value, ast.Constant) and k.value.value is True
                      for k in call.keywords)
        keyword = next((k.value for k in call.keywords if k.arg in DATA_KEYWORDS), None)
        root = keyword if keyword is not None else call.args[0] if call.args else None
        path = root.value if isinstance(root, ast.Constant) and isinstance(root.value, str) else None
        relative = path is not None and _RELATIVE.fullmatch(path) is not None and ("/" in path or "." in path)
        cache = next((k.value.value for k in call.keywords if k.arg == "cache_dir" and isinstance(k.value, ast.Constant)
                      and isinstance(k.value.value, str) and _RELATIVE.fullmatch(k.value.value)), None)
        if cache and cache.strip("./"):  # `load_dataset(..., cache_dir="./data/")`: the library caches there
            downloads.append(Fact(name=repr(cache), file=rel, line=call.lineno))
        if fetches and relative:
            downloads.append(Fact(name=repr(path), file=rel, line=call.lineno))
        elif (read := _read_path(call)) is not None or relative and (name in LISTERS or keyword is not None):
            reads.append(Fact(name=read or path or "", file=rel, line=call.lineno))
    return reads, downloads


ENV_READS = ("os.environ.get", "os.getenv", "environ.get", "getenv")
DATA_WORDS = re.compile(r"DATA|CORPUS|DATASET", re.I)


def env_data_roots(tree: ast.Module, rel: str, root: Path) -> list[Required]:
    """Environment variables the code takes its data folder from (`data_path = os.environ.get("DATA_PATH",
    ".")`) whose default gives files this machine lacks (`os.path.join(data_path, "data/fineweb10B/*.bin")`
    matches nothing from the repo root): the user must say where the data is, as `VAR=path` on the command."""
    roots: dict[str, tuple[str, str]] = {}  # variable name -> (environment variable, its default)
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Call) and _dotted(node.value.func) in ENV_READS \
                and len(words := _literals(node.value.args)) == len(node.value.args) == 2 \
                and DATA_WORDS.search(words[0]) and not OUTPUT_WORDS.search(words[0].lower()):
            roots[node.targets[0].id] = (words[0], words[1])
    found: dict[str, Required] = {}
    for node in walk(tree) if roots else ():
        if isinstance(node, ast.Call) and _dotted(node.func) in ("os.path.join", "posixpath.join") and node.args \
                and isinstance(node.args[0], ast.Name) and node.args[0].id in roots \
                and len(parts := _literals(node.args[1:])) == len(node.args) - 1:
            var, default = roots[node.args[0].id]
            path = posixpath.join(default, *parts)
            if var not in found and not posixpath.isabs(path) and ".." not in path.split("/") \
                    and not glob.glob(os.path.join(root, path)):  # inside the checkout only: a repo's text steers it
                found[var] = Required(name=var, kind="env", file=rel, line=node.lineno)
    return list(found.values())


def _literals(nodes: list[ast.expr]) -> list[str]:
    """The string constants among `nodes`, in order."""
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _read_path(call: ast.Call) -> str | None:
    """The relative file name a reading call is given as a literal (`open('input.txt', 'r')`), else None."""
    name = _dotted(call.func)
    if name not in READERS or not call.args or not isinstance(call.args[0], ast.Constant):
        return None
    path = call.args[0].value
    if not isinstance(path, str) or not re.fullmatch(r"(?!/|~)[\w./-]+\.\w+", path):
        return None
    if name == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if mode is not None and not (isinstance(mode, ast.Constant) and isinstance(mode.value, str)
                                     and not set(mode.value) & set("wax+")):
            return None
    return path


def _calls_under(body: list[ast.stmt], guards: list[ast.expr]) -> Iterator[tuple[ast.Call, list[ast.expr]]]:
    """Each call a body makes, with the tests of the `if`s (and loops' `while`s) it sits under."""
    for stmt in body:
        for part in _own(stmt):
            yield from ((n, guards) for n in ast.walk(part) if isinstance(n, ast.Call))
        inner = [*guards, stmt.test] if isinstance(stmt, ast.If | ast.While) else guards
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                stmts = [s for h in block for s in h.body] if field == "handlers" else block
                yield from _calls_under(stmts, inner)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


def _add(found: dict[str, Required], names: list[str], spelled: Mapping[str, str], rel: str, line: int) -> None:
    flags = [spelled.get(n, f"--{n}") for n in names]
    if not any(f in found for f in flags):
        found[flags[0]] = Required(name=flags[0], kind="option", file=rel, line=line, alternatives=flags[1:])


def _reached_bodies(tree: ast.Module) -> Iterator[list[ast.stmt]]:
    """The module's top-level code (its `__main__` block included) and the bodies of its own functions
    that code calls, directly or through one another."""
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    top = [s for s in tree.body if not isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)]
    yield top
    seen: set[str] = set()
    todo = [top]
    while todo:
        body = todo.pop()
        for stmt in body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in defs \
                        and node.func.id not in seen:
                    seen.add(node.func.id)
                    todo.append(defs[node.func.id].body)
                    yield defs[node.func.id].body


def _straight(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a body that run whenever it runs: into `with`, `try` and the `__main__` block,
    never into a branch or a loop (whose own `if` chains are still judged as a whole)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.With | ast.AsyncWith):
            yield from _straight(stmt.body)
        elif isinstance(stmt, ast.Try):
            yield from _straight(stmt.body)
        elif isinstance(stmt, ast.If) and "__main__" in ast.dump(stmt.test):
            yield from _straight(stmt.body)


def _own(stmt: ast.stmt) -> list[ast.AST]:
    """What a statement itself evaluates each time it runs: a compound one's header, never its body."""
    if isinstance(stmt, ast.If | ast.While):
        return [stmt.test]
    if isinstance(stmt, ast.For | ast.AsyncFor):
        return [stmt.iter]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return list(stmt.items)
    if isinstance(stmt, ast.Try | ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return []
    return [stmt]


def _raised_for(stmt: ast.stmt, values: Values, loads: bool = False) -> Iterator[list[str]]:
    """The settings an `if` chain raises without: `if a.x: ... elif a.y: ... else: raise`, every test
    false at the defaults, or `if a.x is None: raise`, true there. A setting the reading does not know
    counts as unset only where the error's own words name it (`"Either datasets or dataset_name ..."`)."""
    if not isinstance(stmt, ast.If):
        return
    tests, node = [stmt.test], stmt
    while len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
        node = node.orelse[0]
        tests.append(node.test)
    raised = _raise_in(node.orelse)
    if raised is not None:
        known = values if loads else _named_unset(tests, raised, values)
        if tests and all(truth(t, known) is False for t in tests):
            names = [n for t in tests for n in settings_read(t, known)]
            if names:
                yield list(dict.fromkeys(names))
    if len(tests) == 1 and (raised := _raise_in(stmt.body)) is not None:
        known = values if loads else _named_unset(tests, raised, values)
        if truth(stmt.test, known) is True and (names := settings_read(stmt.test, known)):
            yield names


def _raise_in(body: list[ast.stmt]) -> ast.Raise | None:
    return next((s for s in body if isinstance(s, ast.Raise)), None)


def _named_unset(tests: list[ast.expr], raised: ast.Raise, values: Values) -> Values:
    """`values`, plus as unset each unknown setting the tests read whose name the error message says."""
    words = set(re.findall(r"\w+", " ".join(n.value for n in ast.walk(raised)
                                              if isinstance(n, ast.Constant) and isinstance(n.value, str))))
    known = dict(values)
    for test in tests:
        for n in ast.walk(test):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in values.objects \
                    and n.attr not in known and n.attr in words:
                known[n.attr] = None
    return Values(known, values.objects)


def _aliases(bodies: list[list[ast.stmt]], values: Values) -> dict[str, list[str]]:
    """Local names and settings that carry other settings' values: `root = args.data or args.data_dir`,
    `args.data_dir = args.data` (wherever it is made: it only adds ways to give the input)."""
    aliases: dict[str, list[str]] = {}
    for body in bodies:
        for stmt in body:
            for node in ast.walk(stmt):
                if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                    continue
                target = node.targets[0]
                key = target.id if isinstance(target, ast.Name) else setting(target, values)
                if key is not None and (read := settings_read(node.value, values)):
                    aliases[key] = list(dict.fromkeys([*aliases.get(key, []), *read]))
    return aliases


def _fed_by(expr: ast.expr, values: Values, aliases: Mapping[str, list[str]]) -> list[str]:
    """The settings whose value an argument is: itself, the names an alias carries, or each side of an
    `or`; nothing for any other expression (a path built from them has a value of its own)."""
    if isinstance(expr, ast.BoolOp) and isinstance(expr.op, ast.Or):
        return list(dict.fromkeys(n for v in expr.values for n in _fed_by(v, values, aliases)))
    name = setting(expr, values)
    if name is not None:
        return [name, *(a for a in aliases.get(name, []) if a != name)]
    if isinstance(expr, ast.Name) and expr.id in aliases:
        return list(dict.fromkeys(n for a in aliases[expr.id] for n in [a, *aliases.get(a, [])]))
    return []
