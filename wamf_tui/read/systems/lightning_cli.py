"""LightningCLI (jsonargparse over the model, data and Trainer classes): `-c/--config file.yaml`, then nested
`--trainer.max_steps 30` flags. Its Trainer flags are a table (`frameworks/lightning_cli.json`); the `--model.*`
and `--data.*` ones are the classes' own, so only the keys the config file the command names holds are
proven, with their values (a `???` is a value the user must give)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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
        _configured(*named, a)
        return True


def _configured(path: Path, rel: str, a: Analysis) -> None:
    """The logger and the ModelCheckpoint callback the config file gives the Trainer: their rows sit at their
    `class_path` lines. Lightning refuses `enable_checkpointing=False` beside a ModelCheckpoint callback, so
    that save has no switch the run line can give."""
    import yaml  # PyYAML: a dependency of the app, imported where a YAML config is read

    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return
    trainer = _child(node, "trainer")
    loggers = _child(trainer, "logger")
    for logger in loggers.value if isinstance(loggers, yaml.SequenceNode) else [loggers]:
        if (cls := _child(logger, "class_path")) is not None:
            for f in a.trackers:
                if f.name == "Trainer logger":
                    f.name, f.file, f.line = str(cls.value).rsplit(".", 1)[-1], rel, cls.start_mark.line + 1
                    break
            else:
                a.trackers.append(Fact(name=str(cls.value).rsplit(".", 1)[-1], file=rel, line=cls.start_mark.line + 1,
                                       off_switch="--trainer.logger=false"))
    callbacks = _child(trainer, "callbacks")
    for cb in callbacks.value if isinstance(callbacks, yaml.SequenceNode) else []:
        cls = _child(cb, "class_path")
        if cls is not None and str(cls.value).endswith("ModelCheckpoint"):
            for f in a.checkpoints:
                if f.name.startswith("Trainer checkpoints"):
                    f.name, f.file, f.line, f.off_switch = "ModelCheckpoint", rel, cls.start_mark.line + 1, None


def _child(node: Any, key: str) -> Any:
    """The value of `key` in a YAML mapping node; None when there is none."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return None
    return next((v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == key), None)


SYSTEMS = (LightningCli(),)
