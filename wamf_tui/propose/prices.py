"""The spec's arithmetic for what the benchmark switches off or cuts (a save, an eval pass): what the job's
own settings say of it, and what is left to measure."""

from __future__ import annotations

import re

from ..model import Analysis
from ..read.systems.registry import system
from .cap import step_control

_SAVE_INTERVAL = re.compile(r"^-*(save|ckpt|checkpoint)[-_]?(every|interval|steps|freq)$", re.I)


_EVAL_INTERVAL = re.compile(r"^-*(eval|val|validation)[-_]?(every|interval|steps|freq)$|^-*val_check_interval$", re.I)


EVAL_BATCHES_MIN = 1  # an eval the cap cannot skip reads this many batches: its cost, not its result, is timed


_EVAL_BATCHES = re.compile(r"^-*(eval|val)[-_]?(iters|batches)$|^-*limit_val_batches$|^-*num_eval_batches$", re.I)


def _number(a: Analysis, pattern: re.Pattern[str], first: str | None = None) -> tuple[str, int] | None:
    """(flag, default) of the first flag matching `pattern` whose default is a whole number; `first` is tried first."""
    for name in ([first] if first in a.flags else []) + list(a.flags):
        default = (a.flags[name] or "").strip("'\"")
        if pattern.search(name) and default.isdigit() and int(default) > 0:
            return name, int(default)
    return None


def eval_batches_cut(a: Analysis) -> list[str] | None:
    """The job's own setting of how many batches an eval reads (`eval_iters`), set to EVAL_BATCHES_MIN in the
    spelling its parser takes; None where it has none or is already that small."""
    found = _number(a, _EVAL_BATCHES)
    if found is None or found[1] <= EVAL_BATCHES_MIN or found[0].startswith("limit_"):
        return None
    return system(a).render(a, found[0], EVAL_BATCHES_MIN) if system(a).settable(a, found[0]) else None


def checkpoint_price(a: Analysis, off_switch: str | None) -> str:
    """The spec's arithmetic for a switched-off checkpoint: what the script says, and what is left to measure."""
    found = _number(a, _SAVE_INTERVAL, off_switch)
    if found is None:
        return "price: bytes on disk / write bandwidth x saves per run (save interval not found; measure one save)"
    flag, every = found
    control = step_control(a)
    total = control.default if control and (control.default or "").isdigit() else None
    saves = f", {int(total) // every} saves in the real job's {total} steps" if total else ""
    return (f"price: one save every {every} steps ({flag} default){saves}; share of train time = save time / "
            f"({every} x step time), save time = bytes on disk / write bandwidth (to measure)")


def eval_price(a: Analysis) -> str:
    """The spec's arithmetic for an eval pass in the real job: batches x 1/3 of a train step / steps between
    evals (the benchmark's own cut of its batches does not change what it costs the job)."""
    every, batches = _number(a, _EVAL_INTERVAL), _number(a, _EVAL_BATCHES)
    if every and batches:
        share = batches[1] / 3 / every[1]
        return (f"price: {batches[1]} eval batches ({batches[0]}) x 1/3 train step / {every[1]} steps "
                f"({every[0]}) = about {share:.1%} of train time")
    known = ", ".join(f"{n} {v} ({f})" for n, x in (("every", every), ("batches", batches)) if x for f, v in [x])
    return ("price: eval batches x 1/3 of a train step / steps between evals"
            + (f"; found {known}, the rest is to measure" if known else "; interval and batches not found"))
