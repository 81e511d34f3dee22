"""Finding and reading the repo files an entry reaches: a module path from an import (beside the script
first, as `python dir/train.py` puts `dir` on sys.path), a class by name through imports and package
`__init__`s, a file's text as Python decodes it, and the names read as text past the depth that is parsed."""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Callable
from pathlib import Path

from ..infra.files import read_regular, rel_path
from .step import name_of

MAX_BYTES = 2 * 1024 * 1024
REACH_BYTES = 64 * 1024 * 1024  # code read as text past FOLLOW_DEPTH (what it calls) before no fact is dropped
REACH_ENTRIES = 50_000  # files and folders walked there before the same
_DEFINED = re.compile(rb"\b(?:def|class)\s+\w+")
_WORD = bytes(c if chr(c).isascii() and (chr(c).isalnum() or c == ord("_")) else 32 for c in range(256))  # rest: space


def imported_modules(node: ast.Import | ast.ImportFrom, rel: str) -> list[str]:
    """The modules an import names, a relative one made absolute from the importing file `rel`; for
    `from m import x`, `m.x` too (x may be a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        parts = Path(rel).parent.parts
        base = ".".join(parts[: len(parts) - node.level + 1])
        mod = ".".join(x for x in (base, node.module or "") if x)
    elif node.module:
        mod = node.module
    else:
        return []
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def mentioned_names(paths: list[Path], done: set[Path], root: Path) -> set[str] | None:
    """Every name in the repo code the job imports past FOLLOW_DEPTH, read as text, not parsed: the whole
    package each such module sits in (a module outside a package: its folder), since it imports further.
    A function named there may be called from there. None when that is more than REACH_BYTES, or the
    folders hold more than REACH_ENTRIES files (a walk that would not end soon)."""
    folders: dict[Path, bool] = {}  # folder -> whether its subfolders count
    for p in paths:
        top, deep = p.parent, (p.parent / "__init__.py").is_file()
        while deep and (top.parent / "__init__.py").is_file() and root in top.parent.parents:
            top = top.parent
        folders[top] = folders.get(top, False) or deep
    words: set[bytes] = set()
    left, entries = REACH_BYTES, REACH_ENTRIES
    for folder, deep in folders.items():
        for here, subdirs, files in os.walk(folder):
            if not deep:
                subdirs.clear()
            entries -= len(files) + len(subdirs)
            if entries < 0:
                return None
            for f in files:
                path = Path(here, f)
                if not f.endswith(".py") or path.resolve() in done:
                    continue
                try:
                    data = read_regular(path, left + 1)
                except OSError:
                    continue
                left -= len(data)
                if left < 0:
                    return None
                # a name only defined there (`def main():`, its own CLI) is not called from there
                words.update(_DEFINED.sub(b" ", data).translate(_WORD).split())  # translate: 4x a regex findall
    return {w.decode() for w in words}


def read_source(path: Path) -> tuple[str | None, str | None]:
    """(text, why it is partial)."""
    try:
        size = path.stat().st_size
        data = read_regular(path, MAX_BYTES)
    except OSError as e:
        return None, f"could not read {path.name}: {e.strerror or e}"
    if not data.strip():
        return "", "the file is empty"
    if b"\0" in data[:8192]:
        return None, "the file is binary, not Python source"
    why = f"the file is {size // 1024} KiB; only the first {MAX_BYTES // 1024} KiB were scanned" \
        if size > MAX_BYTES else None
    try:  # as Python reads it: a BOM, or a coding line (`# -*- coding: latin-1 -*-`)
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError:  # an unknown or inconsistent coding line
        encoding = "utf-8"
    try:
        return data.decode(encoding), why
    except (UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace"), "the file is not UTF-8; scanned as text"


def as_module(path: Path, root: Path) -> tuple[str | None, str]:
    """(`pkg.sub.train`, the folder to run it from) for a script inside a package, else (None, "")."""
    path, root = path.resolve(), root.resolve()
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder != root and root in folder.parents:
        parts.insert(0, folder.name)
        folder = folder.parent
    if len(parts) == 1:
        return None, ""
    return ".".join(parts), rel_path(folder, root) if folder != root else ""


def class_finder(tree: ast.Module, path: Path, root: Path) -> Callable[[str], ast.ClassDef | None]:
    """A class this file defines or imports by name (`from pkg.args import TrainArgs`, `from .args import X`,
    through a package's `__init__` that imports it from its module), read from its module's source when asked
    for, with the fields of its bases in the repo after its own (a dataclass inherits them, and a factory
    makes options of them too) and its own bases as written; None when it is not the repo's."""
    parsed: dict[Path, ast.Module] = {path: tree}
    names: dict[Path, dict[str, tuple[Path | None, str]]] = {}

    def module(file: Path) -> ast.Module:
        if file not in parsed:
            text, _ = read_source(file)
            try:
                parsed[file] = ast.parse(text or "")
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                parsed[file] = ast.Module(body=[], type_ignores=[])
        return parsed[file]

    def imported(file: Path) -> dict[str, tuple[Path | None, str]]:
        """What each name a file imports is (at the top, or inside the function that builds the parser)."""
        if file not in names:
            names[file] = {}
            for node in ast.walk(parsed[file]):
                if isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = file.parents[node.level - 1] if node.level <= len(file.parents) else None
                        target = base / ((node.module or "__init__").replace(".", "/") + ".py") if base else None
                    else:
                        target = module_path(root, node.module or "")
                    names[file].update({a.asname or a.name: (target, a.name) for a in node.names})
        return names[file]

    def locate(name: str, file: Path | None) -> tuple[ast.ClassDef, Path] | None:
        for _ in range(4):  # a package's `__init__` that imports it from its module: followed there
            if file is None or not file.is_file():
                return None
            found = next((n for n in module(file).body if isinstance(n, ast.ClassDef) and n.name == name), None)
            if found is not None:
                return found, file
            file, name = imported(file).get(name, (None, ""))
        return None

    def find(name: str) -> ast.ClassDef | None:
        found = locate(name, path)
        if found is None:
            return None
        body: list[ast.stmt] = []
        todo, seen = [found], 0
        while todo and seen < 6:  # the class, then its bases in the repo, each found from its own module
            cls, file = todo.pop(0)
            seen += 1
            body += cls.body
            todo += [b for base in cls.bases if (b := locate(name_of(base).split(".")[-1], file)) is not None]
        return ast.ClassDef(name=found[0].name, bases=found[0].bases, keywords=[], body=body, decorator_list=[])

    return find


def module_path(root: Path, module: str, beside: Path | None = None) -> Path | None:
    """The repo file an import names: beside the script first (`python dir/train.py` puts `dir` first on
    sys.path, so `from trainer import Trainer` is `dir/trainer.py`), then from the root and `src/`."""
    parts = module.split(".")
    for base in (*([beside] if beside is not None and beside != root else []), root, root / "src"):
        for n in range(len(parts), 0, -1):
            cand = base.joinpath(*parts[:n])
            for p in (cand.with_suffix(".py"), cand / "__init__.py"):
                if p.is_file():
                    return p
    return None

