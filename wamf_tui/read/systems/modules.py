"""The repo modules an entry imports, for the systems that read their settings from one (yacs defaults, a
config module): found by import name through the reader's own resolver, parsed once."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path


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
    for node in ast.walk(tree):
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


def _annotated(annotation: ast.expr | None) -> list[str]:
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
        nested = next((c for c in _annotated(s.annotation) if c in classes), None)
        if nested is not None and depth < 6:
            yield from fields(nested, classes, key + ".", depth + 1)
        else:
            yield key, s, where
