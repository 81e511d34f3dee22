"""OmegaConf's dot-list CLI: `OmegaConf.from_cli()` reads `sys.argv[1:]` as `a.b=value` (no dashes), merged
over the job's config (`OmegaConf.merge(OmegaConf.structured(Args()), file_cfg, cli)`). Over a structured
config an unknown key raises, so its dataclass fields are the whole set; over plain YAML a new key is added
silently (unproven). A dashed flag becomes a key named `--x`: refused.

Its sibling reads the same merge done by a config class's own loader: `TrainConfig.load(sys.argv[1],
[clean_opt(s) for s in sys.argv[2:]])`, whose `load` (on the class or a base) merges `om.from_dotlist(overrides)`
over `om.structured(cls)` and the YAML file. Where the words pass through a function that strips their dashes
(`name.strip("-")`), `--key=value` is taken as `key=value`."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Fact
from ..lengths import length_control
from ..nodes import of_type, walk
from .base import Kind, Refusal, Verdict
from .common import Dashed
from .modules import Classes, called, classes_of, fields, imported_files, named_file, parsed, yaml_leaves

OUTPUT = re.compile(r"^(dump_dir|output_dir|out_dir|save_dir|log_dir|work_dir|checkpoint_dir|ckpt_dir|save_folder"
                    r"|output_folder|log_folder)$")
NOT_A_KEY = "its OmegaConf dot-list takes key=value words, no dashes"


class OmegaConfCli(Dashed):
    kind: Kind = "omegaconf_cli"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system in ("omegaconf", "unknown", "constants") and any(
            called(n) == "from_cli" for n in of_type(tree, ast.Call))

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        classes = classes_of(tree, rel, root, find)
        structured = [c.args[0] for c in walk(tree) if called(c) == "structured" and isinstance(c, ast.Call)
                      and c.args]
        named = [x.func.id if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) else
                 x.id if isinstance(x, ast.Name) else "" for x in structured]
        for name in (n for n in named if n in classes):
            self._fields(name, classes, a)
        if not any(n in classes for n in named):  # over a structured base its fields are the whole set
            a.parser_open = "merges its dot-list over a config it does not type: a new key is added silently"
        for assign in (x for x in walk(tree) if isinstance(x, ast.Assign)):  # keys the code reads off the
            if called(assign.value) == "from_cli":  # dot-list itself (`cli_args.config`)
                held = {t.id for t in assign.targets if isinstance(t, ast.Name)}
                a.flags.update({x.attr: None for x in walk(tree) if isinstance(x, ast.Attribute)
                                and isinstance(x.value, ast.Name) and x.value.id in held and x.attr not in a.flags})
        loaded = named_file(command, root, ["config"])
        if loaded is not None:  # `OmegaConf.load(cli.config)` merged over the defaults
            a.resolved.update(yaml_leaves(*loaded))
        return True

    def _fields(self, name: str, classes: Classes, a: Analysis) -> None:
        for key, s, where in fields(name, classes):
            default = ast.unparse(s.value)[:80] if s.value is not None else None
            a.flags[key] = default
            leaf = key.split(".")[-1]
            if control := length_control(key, default, where, s.lineno):
                a.step_controls.insert(0, control)
            if OUTPUT.match(leaf):
                a.output_dirs.append(Fact(name=key, off_switch=key, file=where, line=s.lineno))

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if word.startswith("-"):
            return "refused"
        key = word.split("=")[0].lstrip("+")
        if key in a.flags:
            return "proven"
        return "unknown" if a.parser_open else "refused"

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        problems = [f"{w.split('=')[0]}: {NOT_A_KEY} ({name})" for w in args if w.startswith("-")]
        verdicts = [(w.split("=")[0], self.accepts(a, w, given)) for w in args if not w.startswith("-")]
        problems += [f"{k} is not a key of {name}'s structured config"
                     for k, v in verdicts if v == "refused"]
        doubts = [f"{k}: not a key of {name}'s config as read; OmegaConf adds it silently" for k, v in verdicts
                  if v == "unknown"]
        return problems, doubts

    def settable(self, a: Analysis, setting: str) -> bool:
        return not setting.startswith("-") and setting in a.flags

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        return [f"{setting}={value}"]

    def groups(self, words: Sequence[str]) -> list[list[str]]:
        return [[w] for w in words]

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        said = (w.partition("=") for w in args)
        return {k.lstrip("+"): v for k, eq, v in said if eq and not k.startswith("-")}


class FunctionLoaderDotlist(OmegaConfCli):
    """A thin entry that hands the command line to a function of the repo (`train_from_yaml(sys.argv[1],
    sys.argv[2:])`) which loads the YAML and merges the dot-list over it (`om.load(path)`, `om.from_cli(args)`):
    the YAML's keys are its settings, a new key is added silently."""

    kind: Kind = "omegaconf_loader"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system in ("omegaconf", "unknown", "constants") and any(
            r.kind == "positional" for r in a.required) and _argv_function(tree) is not None

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        name = _argv_function(tree)
        body = _function(name, tree, rel, find) if name else None
        if body is None or not ({"load", "from_cli"} <= (calls := {called(c) for c in ast.walk(body)})
                                or {"load", "from_dotlist"} <= calls):
            return False
        a.parser_open = "merges its dot-list over a YAML file it does not type: a new key is added silently"
        here = Path(rel).parent
        loaded = named_file(command, root) or named_file(command, root / here)
        if loaded is not None:  # the YAML positional: its keys are the job's settings, as the command names it
            path, named = loaded
            leaves = yaml_leaves(path, str(here / named) if not (root / named).is_file() else named)
            a.resolved.update(leaves)
            a.flags.update({k: v.value for k, v in leaves.items() if k not in a.flags})
        return True


class ClassLoaderDotlist(OmegaConfCli):
    kind: Kind = "omegaconf_dotlist"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system in ("omegaconf", "unknown", "constants") and any(  # the YAML read from sys.argv
            r.kind == "positional" for r in a.required) and _argv_loader(tree) is not None

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        found = _argv_loader(tree)
        classes = classes_of(tree, rel, root, find)
        if found is None or found[0] not in classes or not _merges_a_dotlist(found[0], found[1], classes):
            return False
        self._fields(found[0], classes, a)
        if found[2] is not None and _strips_dashes(found[2], tree, rel, find):
            a.dashes_stripped = True  # `--key=value` reaches the loader as `key=value`
        loaded = named_file(command, root)
        if loaded is not None:  # the YAML positional: the values the job runs with
            a.resolved.update(yaml_leaves(*loaded))
        return True

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        return super().accepts(a, _undashed(a, word), given)

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        words = list(args[1:]) if args and "=" not in args[0] and not args[0].startswith("-") else list(args)
        return super().refusal(a, [_undashed(a, w) for w in words], name, given)  # past the YAML positional

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        return super().values(a, [_undashed(a, w) for w in args])

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        """`--key=value` where the job strips the dashes (as its docs write them), else `key=value`."""
        return [f"--{setting}={value}" if a.dashes_stripped else f"{setting}={value}"]


def _undashed(a: Analysis, word: str) -> str:
    """`--save_folder=x` as the loader sees it where the job strips dashes (`save_folder=x`); else as written."""
    if not a.dashes_stripped or not word.startswith("-"):
        return word
    key, eq, value = word.partition("=")
    return f"{key.strip('-').replace('-', '_')}={value if eq else 'True'}"


def _argv_loader(tree: ast.Module) -> tuple[str, str, str | None] | None:
    """(class, method, the function the override words pass through) of the entry's `Cls.method(<argv word>,
    <argv words>)`: a config class loaded from the command line's YAML and dot-list."""
    from_argv = _argv_names(tree)
    for node in walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and len(node.args) >= 2):
            continue
        path, words = node.args[:2]
        if _reads(path, from_argv) and _reads(words, from_argv):
            through = words.elt.func.id if isinstance(words, ast.ListComp) and isinstance(words.elt, ast.Call) \
                and isinstance(words.elt.func, ast.Name) else None
            return node.func.value.id, node.func.attr, through
    return None


def _argv_function(tree: ast.Module) -> str | None:
    """The function the entry hands its command line to, as `f(<argv word>, <argv words>)` (`train_from_yaml(
    yaml_path, args_list)`), by the name it is imported as; None for a class's method (its sibling's)."""
    from_argv = _argv_names(tree)
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) >= 2 \
                and _reads(node.args[0], from_argv) and _reads(node.args[1], from_argv):
            return node.func.id
    return None


def _function(name: str, tree: ast.Module, rel: str, find: Callable[[str], Path | None],
              depth: int = 0) -> ast.FunctionDef | None:
    """The repo function `name` as `tree` imports it (`from pkg.command_utils import train_from_yaml`), through
    a package `__init__` that imports it from its module in turn; None where it is not the repo's."""
    defined = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == name), None)
    if defined is not None or depth > 3:
        return defined
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any((n.asname or n.name) == name for n in node.names):
            original = next(n.name for n in node.names if (n.asname or n.name) == name)
            parts = Path(rel).parent.parts
            base = ".".join(parts[: len(parts) - node.level + 1]) if node.level else ""
            module = ".".join(x for x in (base, node.module or "") if x)
            path = find(module) if module else None
            if path is not None:
                at = module.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
                return _function(original, parsed(path), at, find, depth + 1)
    return None


def _argv_names(tree: ast.Module) -> set[str]:
    """The names the module assigns from `sys.argv` (`yaml_path, args_list = sys.argv[1], sys.argv[2:]`)."""
    return {n.id for node in walk(tree) if isinstance(node, ast.Assign) and _mentions_argv(node.value)
            for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _reads(expr: ast.expr, from_argv: set[str]) -> bool:
    """Whether `expr` is `sys.argv[...]`, or is made from a name assigned from it (`[clean_opt(s) for s in rest]`)."""
    return _mentions_argv(expr) or any(isinstance(n, ast.Name) and n.id in from_argv for n in ast.walk(expr))


def _mentions_argv(expr: ast.expr) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "argv" for n in ast.walk(expr))


def _merges_a_dotlist(name: str, method: str, classes: Classes, depth: int = 0) -> bool:
    """Whether `name.method` (found on the class or a repo base) merges a `from_dotlist` over `structured(cls)`."""
    node, _ = classes[name]
    fn = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == method), None)
    if fn is not None:
        calls = {called(c) for c in ast.walk(fn) if isinstance(c, ast.Call)}
        return {"from_dotlist", "structured"} <= calls
    return depth < 6 and any(_merges_a_dotlist(b.id, method, classes, depth + 1) for b in node.bases
                             if isinstance(b, ast.Name) and b.id in classes)


def _strips_dashes(function: str, tree: ast.Module, rel: str, find: Callable[[str], Path | None]) -> bool:
    """Whether the function the words pass through (the entry's or an imported module's) strips their dashes."""
    trees = [tree, *(parsed(p) for p in imported_files(tree, rel, find, depth=1))]
    for t in trees:
        for fn in (n for n in t.body if isinstance(n, ast.FunctionDef) and n.name == function):
            text = ast.unparse(fn)
            return any(s in text for s in ("strip('-')", "lstrip('-')", "removeprefix('--')", "removeprefix('-')"))
    return False


SYSTEMS = (OmegaConfCli(), ClassLoaderDotlist(), FunctionLoaderDotlist())
