"""The repo modules an entry imports, for the systems that read their settings from one (yacs defaults, a
config module): found by import name through the reader's own resolver, parsed once."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Literal

from ...model import Analysis, Required, Resolved
from ..nodes import walk


def called(node: ast.AST) -> str:
    """The last name of what a call calls (`parse` of `simple_parsing.parse(Config)`); "" for anything else."""
    func = node.func if isinstance(node, ast.Call) else None
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


@lru_cache(maxsize=64)
def parsed(path: Path) -> ast.Module:
    """The module at `path`, or an empty one where it cannot be read or parsed."""
    try:
        return ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError, RecursionError, MemoryError):
        return ast.Module(body=[], type_ignores=[])


def imports(tree: ast.Module, rel: str) -> list[str]:
    """The module names a file imports, relative ones made absolute from `rel` (`from .defaults import _C`)."""
    names: list[str] = []
    for node in walk(tree):
        if isinstance(node, ast.Import):
            names += [n.name for n in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = Path(rel).parent.parts
            base = ".".join(parts[: len(parts) - node.level + 1]) if node.level else ""
            module = ".".join(x for x in (base, node.module or "") if x)
            names += [module, *(f"{module}.{n.name}" for n in node.names)] if module else []
    return names


def imported_files(tree: ast.Module, rel: str, find: Callable[[str], Path | None], depth: int) -> Iterator[Path]:
    """The repo files `tree` imports, and theirs, `depth` levels deep; `find` maps a module name to its file."""
    seen: set[Path] = set()
    level = [(tree, rel)]
    for _ in range(depth):
        following = []
        for module, at in level:
            for name in imports(module, at):
                path = find(name)
                if path is None or path in seen:
                    continue
                seen.add(path)
                yield path
                following.append((parsed(path), name.replace(".", "/") + (
                    "/__init__.py" if path.name == "__init__.py" else ".py")))
        level = following


Classes = dict[str, tuple[ast.ClassDef, str]]  # class name -> its definition and file (from the repo root)


def classes_of(tree: ast.Module, rel: str, root: Path, find: Callable[[str], Path | None]) -> Classes:
    """The classes the entry defines and those of the repo modules it imports (two levels), by name."""
    found: Classes = {n.name: (n, rel) for n in tree.body if isinstance(n, ast.ClassDef)}
    for path in imported_files(tree, rel, find, depth=2):
        where = path.relative_to(root).as_posix() if path.is_relative_to(root) else path.name
        for n in parsed(path).body:
            if isinstance(n, ast.ClassDef):
                found.setdefault(n.name, (n, where))
    return found


def annotated(annotation: ast.expr | None) -> list[str]:
    """The class names an annotation can hold (`Optional[DataArgs]`, `DataArgs | None` -> DataArgs)."""
    return [n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)] if annotation is not None else []


def fields(name: str, classes: Classes, prefix: str = "", depth: int = 0) -> Iterator[tuple[str, ast.AnnAssign, str]]:
    """(dotted key, field, file) of every leaf field of the dataclass `name`: its repo bases' first, a field
    typed with another repo dataclass opened into that one's (`data.root_dir`)."""
    node, where = classes[name]
    for base in (b.id for b in node.bases if isinstance(b, ast.Name) and b.id in classes and depth < 6):
        yield from fields(base, classes, prefix, depth + 1)
    for s in (x for x in node.body if isinstance(x, ast.AnnAssign) and isinstance(x.target, ast.Name)):
        key = prefix + s.target.id  # type: ignore[union-attr]
        nested = next((c for c in annotated(s.annotation) if c in classes), None)
        if nested is not None and depth < 6:
            yield from fields(nested, classes, key + ".", depth + 1)
        else:
            yield key, s, where


MAX_LEAVES = 5000  # a YAML whose aliases expand past this is read no further


def yaml_leaves(path: Path, rel: str) -> dict[str, Resolved]:
    """Each leaf of a YAML config file by its dotted key (`SOLVER.MAX_EPOCHS`), as written, with its `rel:line`;
    empty where the file cannot be read. Composed, not constructed: nothing in it runs or expands past
    MAX_LEAVES."""
    import yaml  # PyYAML: a dependency of the app, imported where a YAML config is read

    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    out: dict[str, Resolved] = {}
    stack: list[tuple[str, yaml.Node]] = [("", node)] if node is not None else []
    while stack and len(out) < MAX_LEAVES:
        prefix, at = stack.pop()
        if isinstance(at, yaml.MappingNode):
            stack += [(f"{prefix}{k.value}." if isinstance(k, yaml.ScalarNode) else prefix, v)
                      for k, v in reversed(at.value)]
        elif prefix:
            text = at.value if isinstance(at, yaml.ScalarNode) else "[...]"
            out[prefix[:-1]] = Resolved(value=str(text)[:80], source=f"{rel}:{at.start_mark.line + 1}")
    return out


def named_file(command: Sequence[str], root: Path, flags: Sequence[str] = (), suffixes: tuple[str, ...] = (
        ".yaml", ".yml")) -> tuple[Path, str] | None:
    """The config file the command names: the value of one of `flags` (`--config_file x.yml`, `config=x.yaml`),
    or else the first word that is a file of the checkout with one of `suffixes`; its path and its name."""
    words = list(command)
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if flags and name not in flags:
            continue
        value = (value if eq else words[i + 1] if flags and i + 1 < len(words) else name).strip("'\"")
        if value.endswith(suffixes) and (root / value).is_file():
            return root / value, value
    return None


_BUILDS = re.compile(r"^[ \t-]*(?:class_path|target|_target_):\s*['\"]?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)", re.M)


def config_targets(command: Sequence[str], root: Path, limit: int = 50) -> list[str]:
    """The classes the YAML config the command names builds (LightningCLI's `class_path: pkg.mod.Model`,
    `instantiate_from_config`'s `target:`, Hydra's `_target_:`), by dotted name: a LightningModule reached only
    through the config, never through an import in code."""
    named = named_file(command, root)
    if named is None:
        return []
    try:
        text = named[0].read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return list(dict.fromkeys(m.group(1) for m in _BUILDS.finditer(text)))[:limit]


# a setting that names data the job reads (not a folder it writes): `data.root_dir`, `--datadir`, `DATA_PATH`
INPUT = re.compile(r"(^|[._-])(data|dataset|train|val|root|image|images|img|audio|video)_?"
                   r"(dir|path|root|file|files|list|local)s?$|^(datadir|root_dir)$", re.I)


# a file of weights or data the job loads (`PRETRAIN_PATH: /home/author/.torch/models/resnet50.pth`)
LOADED = re.compile(r"\.(pth|pt|ckpt|bin|safetensors|pkl|npy|npz|h5|tar|zip)$", re.I)


def not_here(value: str, root: Path) -> bool:
    """Whether a path a setting or command names is not on this machine: `~` expanded, a relative one from the
    repo root (where the job runs), a pattern (`shard-{0000..2175}.tar`) judged by its folder."""
    plain = re.split(r"[{*?\[]", value, maxsplit=1)
    path = Path(plain[0]).expanduser()
    path = path if path.is_absolute() else root / path
    return not (path if len(plain) == 1 else path.parent).exists()


def absent_inputs(resolved: Mapping[str, Resolved], root: Path, kind: Literal["hydra", "key"] = "hydra",
                  fetched: Sequence[str] = ()) -> list[Required]:
    """Data paths and weight files the config file the command names sets that are not on this machine
    (relative ones from the repo root, where the job runs): the user must give their own, so they are asked
    for by name. `kind`: how a key that is no `--flag` is given (Hydra's `key=v`, yacs's `KEY V`)."""
    out = []
    for key, said in resolved.items():
        if key in fetched:  # the job downloads it there when it is missing
            continue
        file, _, line = said.source.rpartition(":")
        value = (said.value or "").strip("'\"")
        if not file or not line.isdigit() or not (INPUT.search(key.lstrip("-")) or LOADED.search(value)) \
                or not value or value == "???" or "://" in value or any(c in value for c in "${}*?[]"):
            continue
        if not_here(value, root):
            out.append(Required(name=key, kind="option" if key.startswith("-") else kind, file=file, line=int(line)))
    return out


CONFIG_FLAGS = ("--config", "--cfg", "--config_file", "--config-file", "--config_path")


def default_config_inputs(a: Analysis, root: Path) -> list[Required]:
    """A plain parser's `--config` whose file (the command's, else its default: BLIP's
    `./configs/caption_coco.yaml`) sets a data path this machine lacks: no flag overrides its keys, so the
    user gives a config of their own; the flag is asked for, at the key's file:line."""
    for flag in CONFIG_FLAGS:
        said = a.resolved.get(flag)
        value = ((said.value if said is not None else None) or a.flags.get(flag) or "").strip("'\"")
        if flag not in a.flags or not value.endswith((".yaml", ".yml")) or not (root / value).is_file():
            continue
        absent = absent_inputs(yaml_leaves(root / value, value.removeprefix("./")), root)
        if absent:
            return [Required(name=flag, kind="option", file=absent[0].file, line=absent[0].line)]
    return []
