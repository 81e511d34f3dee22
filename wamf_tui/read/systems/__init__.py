"""The config systems, one module each behind `base.ConfigSystem`; a module's `SYSTEMS` are found here.

Adding a system is one module that defines `SYSTEMS` (and its kind in `base.Kind`); nothing else names it.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
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


def refiners() -> list[Refines]:
    """The systems that sit on another parser, found from the entry's own module."""
    return [s for s in registry().values() if isinstance(s, Refines)]
