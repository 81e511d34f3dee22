"""The names every record shares: the config systems, the step numbers and titles, the choices offered,
and `PathText`, a path kept exact through JSON."""

from __future__ import annotations

import os
from enum import IntEnum
from typing import Annotated, Literal, cast

from ..infra.records import Before, Dump

# The config system an entry's own parse call uses: `read/systems/` has one module per kind.
Kind = Literal["unknown", "constants", "argparse", "configurator", "hf", "hf_trainer", "fire", "hydra",
               "omegaconf", "omegaconf_cli", "omegaconf_dotlist", "omegaconf_loader", "tyro", "jsonargparse",
               "lightning_cli", "click", "typer", "absl", "yacs", "ml_collections", "simple_parsing", "configargparse",
               "argbind", "mmengine", "draccus"]
# Sessions saved before the kinds were typed hold the old labels: read them as their kind, so a resumed
# session keeps its answers (an unknown label reads as "unknown", and the job is read again anyway).
_OLD_LABELS = {"HfArgumentParser": "hf", "HfArgumentParser (TrainingArguments)": "hf_trainer",
               "jsonargparse CLI": "jsonargparse", "LightningCLI": "lightning_cli"}


def known_kind(value: object) -> object:
    """A saved config system as its kind: an old label read as the kind it named, anything else "unknown"."""
    if isinstance(value, str) and value not in Kind.__args__:  # type: ignore[attr-defined]
        return _OLD_LABELS.get(value, "unknown")
    return value


def as_kind(label: str) -> Kind:
    """A config system's kind from its name or an old label (`jsonargparse CLI`); "unknown" for anything else."""
    return cast(Kind, known_kind(label))


_FS = "fs-bytes:"  # a path that is not UTF-8 (a byte from another encoding in a folder name), saved as hex


def _path_to_json(path: str) -> str:
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        return _FS + os.fsencode(path).hex()


def _path_from_json(value: object) -> object:
    if isinstance(value, str) and value.startswith(_FS):
        try:
            return os.fsdecode(bytes.fromhex(value[len(_FS):]))
        except ValueError:
            return value
    return value


# A path the app opens (the repo, the contract): kept exact, even when not UTF-8 (Python holds such
# a name with surrogate escapes, which JSON cannot carry), and passed through `visible` to be shown.
PathText = Annotated[str, Before(_path_from_json), Dump(_path_to_json)]

# Mutable defaults are written `[]` / `{}`: a record makes a fresh one for each instance.

Register = Literal["mlsys", "algo"]


class Step(IntEnum):
    READER = 0
    JOB = 1
    CHECKS = 2
    RULES = 3
    CONFIRM = 4


STEP_TITLES = {
    Step.READER: "Reader",
    Step.JOB: "Job",
    Step.CHECKS: "Checks",
    Step.RULES: "Rules",
    Step.CONFIRM: "Confirm",
}

ALLOWED_CHANGES = (
    "system configs",
    "enabling existing acceleration features with small code edits",
    "installing faster backends",
    "changing Python-level workflow code",
    "modifying Triton/CUDA kernels",
)

HINTS = ("slow start-up", "slow steady step", "memory", "not sure")
