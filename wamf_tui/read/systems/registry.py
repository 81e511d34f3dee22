"""Every config system module's `SYSTEMS`, found by listing the package; the entry's system by its kind."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path

from ...model import Analysis
from ..values import layered
from .base import ConfigSystem, Kind, Refines
from .modules import absent_inputs, default_config_inputs


@cache
def registry() -> dict[Kind, ConfigSystem]:
    found: dict[Kind, ConfigSystem] = {}
    for info in pkgutil.iter_modules([str(Path(__file__).parent)]):
        module = importlib.import_module(f"{__package__}.{info.name}")
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
            _switches_now_flags(a, s)
            break
    a.resolved = layered(a.flags, a.resolved, system(a).values(a, command))
    named = {r.name for r in a.required}  # yacs's are `KEY VALUE` pairs of its opts list
    a.required += [r for r in absent_inputs(a.resolved, root, "key" if a.config_system == "yacs" else "hydra",
                                            a.fetched) if r.name not in named]
    if a.config_system in ("argparse", "configargparse"):
        a.required += [r for r in default_config_inputs(a, root) if r.name not in named]


def _switches_now_flags(a: Analysis, s: ConfigSystem) -> None:
    """A feature's switch read as a bare setting (`if cfg.save_checkpoint and ...:`) before this system's flags
    were known: now the flag that sets it, a boolean that defaults on set to false in the system's spelling."""
    for kind in ("checkpoints", "evals", "uploads", "trackers", "seeds"):
        for f in getattr(a, kind):
            flag = f"--{f.off_switch}"
            if f.off_switch and f.off_switch.isidentifier() and flag in a.flags:
                on = a.flags[flag] == "True" and kind != "seeds"
                f.off_switch = " ".join(s.render(a, flag, "false")) if on else flag
