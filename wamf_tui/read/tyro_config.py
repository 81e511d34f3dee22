"""A tyro job's nested flags, read from its config classes: tyro names a nested dataclass's field
`--<the parent's field>.<field>`, so the section of a setting is the field, in another config class, whose
type is the class that holds it (`metrics: MetricsProcessor.Config`). From that: `--training.steps` for the
loop bound the code reads as `config.training.steps`, and `--metrics.no-enable-tensorboard` for a feature
under `if config.enable_tensorboard:`, whatever defaults the job's config function sets. Pure: it works on
what the reader collected from the modules it read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..model import GIVEN, Analysis, Fact, StepControl
from .lengths import length_role

FOLDER = re.compile(r"(^|_)(out|output|outputs|save|dump|ckpt|checkpoint|log|logs)_?(dir|path|folder|root)?$")


@dataclass
class ConfigClasses:
    """What the classes of every module read say, gathered as the reader goes."""

    fields: dict[str, dict[str, str]] = field(default_factory=dict)  # class as nested (`Outer.Config`) -> its
    # annotated fields -> their types as written
    bounds: dict[str, tuple[str, int]] = field(default_factory=dict)  # a step-like chain a comparison reads
    # (`self.config.training.steps`) -> (file, line)
    where: dict[str, tuple[str, int]] = field(default_factory=dict)  # class -> (file, line) of its `seed` field
    folders: list[tuple[str, str, str, int]] = field(default_factory=list)  # (class, field, file, line) of each
    # field that names a relative output folder (`dump_folder: str = "./outputs"`)
    lengths: list[tuple[str, str, str, int, str | None]] = field(default_factory=list)  # (class, field, file, line,
    # default) of each field that governs the run's length (`read.lengths`)

    def switches(self) -> dict[str, set[str]]:
        """A bool field -> the other fields of the classes that hold it."""
        found: dict[str, set[str]] = {}
        for fields in self.fields.values():
            for name, kind in fields.items():
                if kind == "bool":
                    found.setdefault(name, set()).update(f for f in fields if f != name)
        return found

    def sections(self) -> dict[str, set[str]]:
        """A field whose type is a config class read (a tyro section) -> those classes."""
        found: dict[str, set[str]] = {}
        for fields in self.fields.values():
            for name, kind in fields.items():
                if kind in self.fields:
                    found.setdefault(name, set()).add(kind)
        return found


def nested_switches(result: Analysis, classes: ConfigClasses, command: Sequence[str]) -> None:
    """A feature under a bool field of a nested config (`if config.enable_tensorboard:`): off with tyro's own
    negation, `--metrics.no-enable-tensorboard`, where one section holds the field: the section whose class has
    it (of several, the one in which the command sets another field of that class), else (the classes not
    read) the section in which the command does."""
    switches = classes.switches()
    sections = classes.sections()
    given: dict[str, set[str]] = {}  # a field the command sets -> the sections it sets it in
    for word in command:
        section, dot, key = word.partition("=")[0].removeprefix("--").rpartition(".")
        if word.startswith("--") and dot and section:
            given.setdefault(key.replace("-", "_"), set()).add(section)
    for kind in ("checkpoints", "evals", "uploads", "trackers"):
        for f in getattr(result, kind):
            name = f.off_switch or ""
            if name not in switches or f.guard is None or not f.guard.endswith(f".{name}"):
                continue
            holders = {c for c, fields in classes.fields.items() if fields.get(name) == "bool"}
            by_class = {s for s, types in sections.items() if types & holders}
            by_command = {s for other in switches[name] for s in given.get(other, ())}
            found = (by_class & by_command or by_class) if by_class else by_command
            if len(found) == 1:
                section = found.pop()
                f.off_switch = f"--{section}.no-{name.replace('_', '-')} {GIVEN}"
                result.modelled.append(f"--{section}.no-{name.replace('_', '-')}")


def nested_lengths(result: Analysis, classes: ConfigClasses) -> None:
    """The sections' fields that scale the run (`--training.num_tokens_per_train_step`, `--validator.steps`) and
    their epoch counts; a step bound only the class names is not the loop's (`nested_step` finds that one)."""
    sections = classes.sections()
    for cls, name, file, line, default in classes.lengths:
        for section in (s for s, held in sections.items() if cls in held):
            flag = f"--{section}.{name}"
            role = length_role(flag)
            if (role == "scale" or role == "bound" and "epoch" in name) and \
                    all(c.name != flag for c in result.step_controls):
                result.step_controls.append(StepControl(name=flag, file=file, line=line, default=default, role=role))


def nested_step(result: Analysis, classes: ConfigClasses) -> None:
    """The step count's flag, `--training.steps`, from the bound the code compares the step with
    (`self.step < self.config.training.steps`), where `training` is a section whose class has `steps`. Its
    default is left unknown: the job's config function, not the class, sets it."""
    if any(c.name.startswith("-") and c.role == "bound" for c in result.step_controls):
        return
    sections = classes.sections()
    for chain, (file, line) in classes.bounds.items():
        *_, section, key = chain.split(".")
        if any(key in classes.fields[c] for c in sections.get(section, ())):
            result.step_controls.insert(0, StepControl(name=f"--{section}.{key}", file=file, line=line))
            result.modelled.append(f"--{section}.{key}")
            return


def nested_seed(result: Analysis, classes: ConfigClasses) -> None:
    """The seed's flag, `--debug.seed`, where one section's class has a `seed` field and no flag of the job's
    own is known to seed it: the run line pins it, with no wrapper."""
    if any((s.off_switch or "").startswith("--") for s in result.seeds):
        return
    found = {(s, c) for s, types in classes.sections().items() for c in types if "seed" in classes.fields[c]}
    if len(found) == 1:
        section, cls = found.pop()
        file, line = classes.where[cls]
        result.seeds.insert(0, Fact(name="seed", file=file, line=line, off_switch=f"--{section}.seed=..."))
        result.modelled.append(f"--{section}.seed")


def nested_output(result: Analysis, classes: ConfigClasses) -> None:
    """The job's output folder, `--dump-folder`, where the root config class (one that has sections and is
    none itself) has a field naming a relative folder: the run line points it at the benchmark folder."""
    if any((o.off_switch or "").startswith("--") for o in result.output_dirs):
        return  # the flags read from the CLI's own signature (`--cfg.out-dir`) already name one
    sections = classes.sections()
    nested = {c for types in sections.values() for c in types}
    roots = {c for c, fields in classes.fields.items() if c not in nested and any(k in classes.fields
                                                                                 for k in fields.values())}
    for cls, name, file, line in classes.folders:
        if cls in roots and not any(o.off_switch == f"--{name.replace('_', '-')}=..." for o in result.output_dirs):
            result.output_dirs.insert(0, Fact(name=name, file=file, line=line,
                                              off_switch=f"--{name.replace('_', '-')}=..."))
            result.modelled.append(f"--{name.replace('_', '-')}")
