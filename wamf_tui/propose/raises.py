"""A change that would make the job's config refuse to start: open-instruct's `__post_init__` raises when
`try_launch_beaker_eval_jobs` is on and `push_to_hub` off, so switching the upload off alone crashes the run.
The change also turns off the setting the check needs on, where that is a bool its parser reads (`--x
False`); else it is not made, and says why."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from ..model import Analysis, BenchmarkChange, Fact
from ..read.guards import conjuncts
from ..read.systems.registry import system
from ..read.values import Values, resolved, setting, truth


def kept_from_raising(a: Analysis, changes: list[BenchmarkChange], args: Sequence[str]) -> list[BenchmarkChange]:
    """Each change whose words make one of the job's start-up checks (`a.raises`) fail, mended or held back."""
    if not a.raises:
        return changes
    bools = a.config_system in ("hf", "hf_trainer")
    before = _values(a, args, bools)
    tests = [(r, test) for r in a.raises if (test := _test(r)) is not None and truth(test, before) is not True]
    out = []
    for change in changes:
        for r, test in tests if change.enabled and change.flags else ():
            values = _values(a, [*args, *change.flags], bools)
            if truth(test, values) is not True:
                continue
            fix = _turned_off(test, values, a) if bools else None
            if fix is not None and truth(test, _values(a, [*args, *change.flags, fix, "False"], bools)) is False:
                words = system(a).render(a, fix, "False")
                change = change.model_copy(update={
                    "flags": [*change.flags, *words],
                    "how": f"{change.how} {' '.join(words)} (else {r.name} raises: {r.guard}, {r.file}:{r.line})"})
            else:
                change = change.model_copy(update={
                    "enabled": False, "how": f"stays as it is ({r.name} raises with it: {r.guard}, {r.file}:{r.line})",
                    "exclusion": f"{change.what}: not changed, {r.name} raises with it ({r.file}:{r.line})"})
                break
        out.append(change)
    return out


def start_failures(a: Analysis, args: Sequence[str]) -> list[Fact]:
    """The job's start-up checks the command's values fail (each one stops the run before it trains)."""
    values = _values(a, args, a.config_system in ("hf", "hf_trainer"))
    return [r for r in a.raises if (test := _test(r)) is not None and truth(test, values) is True]


def _values(a: Analysis, args: Sequence[str], bools: bool) -> Values:
    return resolved(a.flags, list(args), frozenset({"args"}), bools)


def _test(r: Fact) -> ast.expr | None:
    try:
        return ast.parse(r.guard or "", mode="eval").body
    except SyntaxError:
        return None


def _turned_off(test: ast.expr, values: Values, a: Analysis) -> str | None:
    """The flag of a bool setting, on by default, that the failing check needs on (`args.try_launch`)."""
    for part in conjuncts(test):
        name = setting(part, values)
        if name is not None and values[name] is True and a.flags.get(f"--{name}") == "True":
            return f"--{name}"
    return None
