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
