"""LightningCLI (jsonargparse over the model, data and Trainer classes): `-c/--config file.yaml`, then nested
`--trainer.max_steps 30` flags. Its Trainer flags are a table (`frameworks/lightning_cli.json`); the `--model.*`
and `--data.*` ones are the classes' own, so only the keys the config file the command names holds are
proven, with their values (a `???` is a value the user must give)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Fact, Required
from .base import Kind
from .common import Dashed
from .modules import named_file, yaml_leaves

OUTPUT = re.compile(r"^(save_dir|default_root_dir|dirpath)$")  # where the Trainer's logger and saves write


class LightningCli(Dashed):
    kind: Kind = "lightning_cli"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system == "lightning_cli"

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        named = named_file(command, root, ["-c", "--config"])
        if named is None:
            return True
        for key, said in yaml_leaves(*named).items():
            flag = f"--{key}"
            a.flags.setdefault(flag, said.value)
            a.resolved[flag] = said
            file, _, line = said.source.rpartition(":")
            if said.value == "???":  # OmegaConf's and jsonargparse's mark of a value to give
                a.required.append(Required(name=flag, kind="option", file=file, line=int(line)))
            if OUTPUT.match(key.split(".")[-1]) and ".callbacks" not in key:
                a.output_dirs.insert(0, Fact(name=flag, off_switch=flag, file=file, line=int(line)))
        return True


SYSTEMS = (LightningCli(),)
