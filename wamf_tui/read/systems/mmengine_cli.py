"""mmengine: argparse reads the entry's own flags and a config file (a Python file with `_base_`
inheritance, read statically by `read.mm_config`), then `--cfg-options key=value ...` (mmengine's
`DictAction`, `nargs='+'`) overrides its dotted keys. The Runner runs the loop from the config: the step
bound is `train_cfg` (`max_iters` for an iteration loop; `max_epochs` otherwise, which no override cuts
inside one epoch), saves are the `default_hooks.checkpoint` hook (`=None` drops a default hook), evals
the `val_cfg` loop every `train_cfg.val_interval`, trackers the visualizer's backends, the seed
`randomness.seed`, outputs `work_dir` (`./work_dirs/<config name>` unless set)."""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path

from ...infra.files import read_text
from ...model import Analysis, Fact, Resolved, StepControl
from ..lengths import length_role
from ..mm_config import MAX_BYTES, Leaf, load, text
from ..nodes import walk
from .argparser import Argparse
from .base import Kind, Refusal, Verdict
from .modules import named_file

OPTIONS = ("--cfg-options", "--cfg_options", "--options")
_LOCAL = "LocalVisBackend"  # writes into work_dir: an output, not a tracker
_NO_VALIDATION = "val_cfg=None val_dataloader=None val_evaluator=None"  # the Runner takes all three or none


def _key(word: str) -> str:
    return word.split("=", 1)[0]


def _known(a: Analysis, key: str) -> bool:
    """A key of the config read: a leaf (`train_cfg.max_iters`) or a node (`default_hooks.checkpoint`)."""
    return key in a.flags or any(k.startswith(key + ".") for k in a.flags)


class MMEngine(Argparse):
    kind: Kind = "mmengine"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        """An argparse entry with mmengine's override option that loads its config with `Config.fromfile`."""
        return a.config_system == "argparse" and any(o in a.flags for o in OPTIONS) and any(
            isinstance(n, ast.Attribute) and n.attr == "fromfile" for n in walk(tree))

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        named = named_file(command, root, suffixes=(".py",))
        leaves = load(named[0], root) if named is not None else {}
        for key, leaf in leaves.items():
            value = text(leaf)
            a.flags[key] = value
            a.resolved[key] = Resolved(value=value, source=f"{leaf.file}:{leaf.line}")
            role = length_role(key)
            if role and value is not None and (role == "scale" or key.startswith("train_cfg.")):
                a.step_controls.insert(0, StepControl(name=key, file=leaf.file, line=leaf.line, default=value,
                                                      role=role))
        _facts(leaves, a)
        a.fetched += [k for k in leaves if k.endswith(".data_root") and (kind := text(leaves.get(
            k.removesuffix("data_root") + "type", Leaf(None, "", 0)))) and _downloads(kind, root)]
        return True

    def _loaded(self, a: Analysis) -> bool:
        return any(not k.startswith("-") for k in a.flags)

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if word.startswith("-"):
            return super().accepts(a, word, given)
        if "=" not in word:
            return "unknown"  # the config file, a positional
        if _known(a, _key(word)):
            return "proven"
        return "refused" if self._loaded(a) else "unknown"  # a key the config lacks is added, silently unused

    def settable(self, a: Analysis, setting: str) -> bool:
        return setting.startswith("--") or _known(a, setting)

    def groups(self, words: Sequence[str]) -> list[list[str]]:
        """Dashed flags with their values, and each `key=value` word alone."""
        out: list[list[str]] = []
        for w in words:
            opens = w.startswith("-") or "=" in w or not out
            if opens or len(out[-1]) > 1 or "=" in out[-1][0] or not out[-1][0].startswith("-"):
                out.append([w])
            else:
                out[-1].append(w)
        return out

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        return super().render(a, setting, value) if setting.startswith("-") else [f"{setting}={value}"]

    def split(self, a: Analysis, args: Sequence[str]) -> tuple[list[str], list[str]]:
        """The command's words without its override list, and the `key=value` words of that list."""
        head: list[str] = []
        pairs: list[str] = []
        taking = False
        for w in args:
            if w.startswith("-"):
                taking = _key(w) in OPTIONS
                if not taking:
                    head.append(w)
            elif taking:
                pairs.append(w)
            else:
                head.append(w)
        return head, pairs

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        head, pairs = self.split(a, args)
        return {**super().values(a, head), **{_key(p): p.split("=", 1)[1] for p in pairs if "=" in p}}

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        head, pairs = self.split(a, args)
        problems, doubts = super().refusal(a, head, name, given)
        problems += [f"{p} is not key=value, as {name}'s --cfg-options takes" for p in pairs if "=" not in p]
        unknown = [_key(p) for p in pairs if "=" in p and not _known(a, _key(p))]
        if unknown and self._loaded(a):
            problems += [f"{k} is not a key of the config {name} reads" for k in unknown]
        elif unknown:
            doubts.append(f"{', '.join(unknown)}: the config file was not read, so not proven ({name})")
        return problems, doubts

    def line(self, a: Analysis, args: Sequence[str], added: Sequence[str]) -> list[str]:
        head, pairs = self.split(a, args)
        flags = [w for g in self.groups(added) if g[0].startswith("-") for w in g]
        more = [w for g in self.groups(added) if not g[0].startswith("-") for w in g]
        option = next((o for o in OPTIONS if o in a.flags), OPTIONS[0])
        return [*head, *flags, *([option, *pairs, *more] if pairs or more else [])]


def python_files(root: Path, limit: int = 5000) -> Iterator[Path]:
    """The repo's Python files outside hidden folders, tests and docs, at most `limit` (a bounded walk)."""
    for here, subdirs, files in os.walk(root):
        subdirs[:] = [d for d in subdirs if not d.startswith(".") and d not in ("tests", "test", "docs")]
        for f in files:
            if f.endswith(".py"):
                limit -= 1
                if limit < 0:
                    return
                yield Path(here, f)


@cache
def _downloads(name: str, root: Path) -> bool:
    """Whether the repo's dataset class `name` (a config's `type='CIFAR10'`) downloads its data when it is
    missing: its `__init__` takes `download`, True by default."""
    pattern = re.compile(rf"^class {re.escape(name)}\b", re.M)
    for path in python_files(root):
        try:
            source = read_text(path, MAX_BYTES)
        except (OSError, ValueError):
            continue
        if not pattern.search(source):
            continue
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            return False
        made = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)
        init = next((n for n in made.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None) \
            if made is not None else None
        if init is None:
            return False
        args = init.args.args + init.args.kwonlyargs
        defaults = [None] * (len(init.args.args) - len(init.args.defaults)) + init.args.defaults \
            + init.args.kw_defaults
        return any(arg.arg == "download" and isinstance(d, ast.Constant) and d.value is True
                   for arg, d in zip(args, defaults, strict=True))
    return False


def _facts(leaves: dict[str, Leaf], a: Analysis) -> None:
    """The Runner's saves, evals, trackers and seed, from the config read."""
    if (hook := leaves.get("default_hooks.checkpoint.type")) is not None:
        a.checkpoints.append(Fact(name=f"{text(hook)} (default_hooks.checkpoint)", file=hook.file, line=hook.line,
                                  off_switch="default_hooks.checkpoint=None"))
    every = leaves.get("train_cfg.val_interval")
    validated = any(k == "val_cfg" or k.startswith("val_cfg.") for k in leaves) and text(
        leaves.get("val_cfg", Leaf({}, "", 0))) != "None"
    if every is not None and validated:
        off = next((f for f in ("--no-validate", "--no_validate") if f in a.flags), _NO_VALIDATION)
        a.evals.append(Fact(name="validation loop (val_cfg)", file=every.file, line=every.line, off_switch=off))
    backends = leaves.get("visualizer.vis_backends")
    if backends is not None and isinstance(backends.value, list):
        for b in backends.value:
            kind = b.get("type") if isinstance(b, dict) else None
            if isinstance(kind, str) and kind != _LOCAL:
                a.trackers.append(Fact(name=kind, file=backends.file, line=backends.line))
    if (seed := leaves.get("randomness.seed")) is not None:
        a.seeds.append(Fact(name="randomness.seed", file=seed.file, line=seed.line, off_switch="randomness.seed"))
    if (out := leaves.get("work_dir")) is not None:
        a.output_dirs.append(Fact(name="work_dir", file=out.file, line=out.line, off_switch="work_dir=..."))


SYSTEMS = (MMEngine(),)
