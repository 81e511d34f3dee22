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
    assert flags["all outputs into one folder"] == ["dump_dir=runs/wamf-bench"]
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
