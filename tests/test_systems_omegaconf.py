"""OmegaConf dot-list jobs: `OmegaConf.from_cli()` merged over a structured config; changes are `key=value`
words, a dashed flag is refused (wamf_tui/read/systems/omegaconf_cli.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

ARGS = """\
from dataclasses import dataclass


@dataclass
class DataArgs:
    root_dir: str = "data/shuffled"
    batch_size: int = 8
"""
TRAIN = """\
from dataclasses import dataclass, field

import torch
from omegaconf import OmegaConf

from lib.args import DataArgs


@dataclass
class TrainArgs:
    dump_dir: str = ""
    steps: int = 1000
    data: DataArgs = field(default_factory=DataArgs)


def train(args):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()


def main():
    cli_args = OmegaConf.from_cli()
    file_cfg = OmegaConf.load(cli_args.config)
    del cli_args.config
    cfg = OmegaConf.merge(OmegaConf.structured(TrainArgs()), file_cfg, cli_args)
    train(OmegaConf.to_object(cfg))


if __name__ == "__main__":
    main()
"""


def test_changes_are_dot_list_words_and_dashed_flags_are_refused(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": TRAIN, "lib/__init__.py": "", "lib/args.py": ARGS})
    a = analyze_script(root / "train.py", root)
    assert a.config_system == "omegaconf_cli"
    assert a.flags["data.root_dir"] == "'data/shuffled'" and a.flags["steps"] == "1000" and "config" in a.flags
    flags = {c.what: c.flags for c in propose(a, 30)}
    assert flags["total steps cut to 30 (was 1000)"] == ["steps=30"]
    assert flags["all outputs into one folder"] == ["dump_dir=$WAMF_OUT"]
    assert not any(w.startswith("-") for words in flags.values() for w in words)
    assert (accepts(a, "data.batch_size=4"), accepts(a, "data.batchsize=4"), accepts(a, "--steps=3")) == (
        "proven", "refused", "refused")
    ok = check_run("python train.py config=c.yaml steps=30 data.root_dir=/d", root, a)
    assert (ok.problems, ok.warnings) == ([], [])
    bad = check_run("python train.py config=c.yaml --steps=30 data.rootdir=/d", root, a)
    assert bad.problems == ["--steps: its OmegaConf dot-list takes key=value words, no dashes (train.py)",
                            "data.rootdir is not a key of train.py's structured config"]


def test_over_an_untyped_config_a_new_key_is_unproven_not_refused(tmp_path):
    """`OmegaConf.merge(OmegaConf.load(path), cli)`: OmegaConf adds an unknown key silently."""
    text = ("from omegaconf import OmegaConf\ncli = OmegaConf.from_cli()\n"
            "cfg = OmegaConf.merge(OmegaConf.load(cli.config), cli)\n")
    root = make_repo(tmp_path / "job", {"train.py": text})
    a = analyze_script(root / "train.py", root)
    assert a.config_system == "omegaconf_cli" and a.parser_open
    assert (accepts(a, "config=c.yaml"), accepts(a, "steps=3")) == ("proven", "unknown")
    said = check_run("python train.py config=c.yaml steps=3", root, a)
    assert said.problems == [] and said.warnings == [
        "steps: not a key of train.py's config as read; OmegaConf adds it silently"]


def test_the_yaml_the_command_names_sets_values_over_the_dataclass_defaults(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": TRAIN, "lib/__init__.py": "", "lib/args.py": ARGS,
                                        "configs/debug.yaml": "dump_dir: /tmp/x\nsteps: 200\ndata:\n  batch_size: 4\n"})
    command = ["config=configs/debug.yaml", "data.batch_size=2"]
    a = analyze_script(root / "train.py", root, command)
    assert {k: (a.resolved[k].value, a.resolved[k].source) for k in ("steps", "data.batch_size", "data.root_dir")} \
        == {"steps": ("200", "configs/debug.yaml:2"), "data.batch_size": ("2", "command"),
            "data.root_dir": ("'data/shuffled'", "default")}
    assert propose(a, 30, "speed", command)[0].what == "total steps cut to 30 (was 200, configs/debug.yaml:2)"


LOADER = """\
from dataclasses import dataclass, field
from typing import Optional

from omegaconf import OmegaConf as om


class BaseConfig:
    @classmethod
    def load(cls, path, overrides=None):
        schema = om.structured(cls)
        conf = om.merge(schema, om.load(str(path)))
        if overrides:
            conf = om.merge(conf, om.from_dotlist(overrides))
        return om.to_object(conf)


@dataclass
class OptimizerConfig(BaseConfig):
    learning_rate: float = 1e-4


@dataclass
class TrainConfig(BaseConfig):
    run_name: Optional[str] = None
    save_folder: str = "./"
    max_duration: int = 10000
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
"""
UTIL = "def clean_opt(arg):\n    if '=' not in arg:\n        arg = f'{arg}=True'\n    name, val = arg.split('=', 1)\n" \
       "    name = name.strip('-').replace('-', '_')\n    return f'{name}={val}'\n"
ENTRY = """\
import sys

import torch

from olm.config import TrainConfig
from olm.util import clean_opt


def main(cfg):
    if cfg.run_name is None:
        raise ValueError("--run_name is required")
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.optimizer.learning_rate)
    for step in range(cfg.max_duration):
        model(torch.ones(2)).sum().backward()
        opt.step()


if __name__ == "__main__":
    yaml_path, args_list = sys.argv[1], sys.argv[2:]
    main(TrainConfig.load(yaml_path, [clean_opt(s) for s in args_list]))
"""


def test_a_config_class_loaded_from_the_yaml_positional_and_a_dot_list_is_read_as_its_fields(tmp_path):
    """OLMo: `TrainConfig.load(sys.argv[1], [clean_opt(s) for s in sys.argv[2:]])`, whose base's `load` merges
    `om.from_dotlist` over `om.structured(cls)` and the YAML file; `clean_opt` strips the words' dashes."""
    root = make_repo(tmp_path / "r", {"olm/__init__.py": "", "olm/config.py": LOADER, "olm/util.py": UTIL,
                                      "scripts/train.py": ENTRY,
                                      "configs/tiny.yaml": "run_name: tiny\nmax_duration: 50\n"})
    a = analyze_script(root / "scripts/train.py", root, ["configs/tiny.yaml"])
    assert a.config_system == "omegaconf_dotlist" and a.dashes_stripped
    assert [(r.name, r.kind) for r in a.required] == [("yaml_path", "positional")]  # run_name: the YAML's to set
    assert accepts(a, "--save_folder=/tmp/x") == accepts(a, "optimizer.learning_rate=1") == "proven"
    assert accepts(a, "--bogus=1") == "refused"
    assert a.resolved["max_duration"].value == "50"
    assert [(c.name, c.role) for c in a.step_controls if c.name == "max_duration"] == [("max_duration", "bound")]
    assert [o.name for o in a.output_dirs] == ["save_folder"]
    untouched = analyze_script(root / "scripts/train.py", root)  # no config named: run_name is still not proven unset
    assert [r.name for r in untouched.required] == ["yaml_path"]


def test_without_a_function_that_strips_them_a_dashed_word_is_refused(tmp_path):
    root = make_repo(tmp_path / "r", {"olm/__init__.py": "", "olm/config.py": LOADER,
                                      "olm/util.py": UTIL.replace("name.strip('-')", "name"),
                                      "scripts/train.py": ENTRY, "configs/tiny.yaml": "run_name: tiny\n"})
    a = analyze_script(root / "scripts/train.py", root, ["configs/tiny.yaml"])
    assert a.config_system == "omegaconf_dotlist" and not a.dashes_stripped
    assert accepts(a, "--save_folder=/tmp/x") == "refused" and accepts(a, "save_folder=/tmp/x") == "proven"


COMMAND_UTILS = """\
from omegaconf import OmegaConf as om


def train_from_yaml(yaml_path, args_list):
    with open(yaml_path) as f:
        yaml_cfg = om.load(f)
    cli_cfg = om.from_cli(args_list)
    cfg = om.merge(yaml_cfg, cli_cfg)
    return train(cfg)
"""

THIN = """\
import sys

from kit.command_utils import train_from_yaml

if __name__ == '__main__':
    yaml_path, args_list = sys.argv[1], sys.argv[2:]
    train_from_yaml(yaml_path, args_list)
"""


def test_a_thin_entry_handing_its_command_line_to_a_yaml_and_dot_list_loader_takes_the_yamls_keys(tmp_path):
    """llm-foundry: `train_from_yaml(sys.argv[1], sys.argv[2:])`, re-exported by a package `__init__`, loads the
    YAML and merges `om.from_cli` over it; a data path the YAML leaves relative and absent is asked for."""
    root = make_repo(tmp_path / "r", {
        "kit/__init__.py": "", "kit/command_utils/__init__.py": "from kit.command_utils.train import train_from_yaml\n",
        "kit/command_utils/train.py": COMMAND_UTILS, "scripts/train/train.py": THIN,
        "scripts/train/yamls/small.yaml": "variables:\n  data_local: ./my-copy-c4\nmax_duration: 4800ba\n"})
    a = analyze_script(root / "scripts/train/train.py", root, ["yamls/small.yaml"])
    assert a.config_system == "omegaconf_loader"
    assert a.resolved["max_duration"].source == "scripts/train/yamls/small.yaml:3"
    assert accepts(a, "max_duration=10ba") == "proven" and accepts(a, "--max_duration=10ba") == "refused"
    assert accepts(a, "new_key=1") == "unknown"  # OmegaConf adds it silently
    assert [(r.name, r.kind) for r in a.required] == [("yaml_path", "positional"), ("variables.data_local", "hydra")]
