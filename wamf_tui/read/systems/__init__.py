"""The config systems, one module each behind `base.ConfigSystem`; a module's `SYSTEMS` are found here.

Adding a system is one module that defines `SYSTEMS` (and its kind in `base.Kind`); nothing else names it.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from .base import ConfigSystem, Kind, Refines

if TYPE_CHECKING:  # the model names `Kind` from here: it is imported before the model is
    from ...model import Analysis


@cache
def registry() -> dict[Kind, ConfigSystem]:
    found: dict[Kind, ConfigSystem] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for system in getattr(module, "SYSTEMS", ()):
            found[system.kind] = system
    return found


def system(a: Analysis) -> ConfigSystem:
    """The entry's config system."""
    return registry()[a.config_system]


def refine(tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
           command: Sequence[str] = ()) -> None:
    """The entry's system, where one that sits on another parser (yacs opts on argparse) claims it and
    its settings are found."""
    for s in registry().values():
        if isinstance(s, Refines) and s.uses(tree, a) and s.read(tree, rel, root, a, find, command):
            a.config_system = s.kind
            return
