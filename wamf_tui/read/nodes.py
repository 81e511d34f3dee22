"""Every node of a module's syntax tree, listed once per tree.

A dozen passes over the entry (its needs, inputs, switches, each config system's claim) each looked at
every node; `ast.walk` rebuilds that list from the tree's fields every time, which on a 40,000-line
script was most of the reading's time. The list is made on the first pass and kept while the tree lives.
"""

from __future__ import annotations

import ast
from weakref import WeakKeyDictionary

_WALKED: WeakKeyDictionary[ast.AST, list[ast.AST]] = WeakKeyDictionary()


def walk(tree: ast.AST) -> list[ast.AST]:
    """`ast.walk(tree)` as a list, in its order, made once per tree (a tree is never changed once parsed)."""
    found = _WALKED.get(tree)
    if found is None:
        found = _WALKED[tree] = list(ast.walk(tree))
    return found
