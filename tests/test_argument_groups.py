"""A parser whose options are made from dataclasses at run time (Megatron's `ArgumentGroupFactory(Config,
exclude=[...]).build_group(parser)`): the options are read from the classes' fields, so the run line uses
the job's own step flag and leaves out the folders that turn saves and tensorboard on. Each case is a small
repo written here, read by the real analyzer."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script

CONFIG = """\
from dataclasses import dataclass, field

@dataclass
class TrainingConfig:
    train_iters: int | None = None
    save: str | None = None
    save_interval: int | None = field(default=None, metadata={"argparse_meta": {"arg_names": ["--save-interval",
                                                                                            "--persistent-save-interval"]}})
    tensorboard_dir: str | None = None
    bias_gelu_fusion: bool = True
    use_flash: bool = False
    internal_only: int = 3
"""

ARGUMENTS = """\
import argparse
from pkg.utils import ArgumentGroupFactory

def parse_args():
    parser = argparse.ArgumentParser()
    from pkg.config import TrainingConfig
    ArgumentGroupFactory(TrainingConfig, exclude=["internal_only"]).build_group(parser, "training")
    parser.add_argument("--lr", type=float, default=1e-4)
    return parser.parse_args()
"""

LOGGING = """\
from torch.utils.tensorboard import SummaryWriter

def writer(args):
    if args.tensorboard_dir:
        return SummaryWriter(args.tensorboard_dir)
"""

TRAIN = """\
import torch
from pkg import logging
from pkg.arguments import parse_args

def train():
    args = parse_args()
    tb = logging.writer(args)
    iteration = 0
    while iteration < args.train_iters:
        loss = model(batch)
        loss.backward()
        optimizer.step()
        iteration += 1
        if args.save and iteration % args.save_interval == 0:
            torch.save(model.state_dict(), args.save)

if __name__ == "__main__":
    train()
"""

FILES = {"train.py": TRAIN, "pkg/__init__.py": "", "pkg/logging.py": LOGGING, "pkg/arguments.py": ARGUMENTS,
         "pkg/utils.py": "class ArgumentGroupFactory:\n    pass\n",
         "pkg/config/__init__.py": "from pkg.config.training import TrainingConfig\n",
         "pkg/config/training.py": CONFIG}


def test_the_options_made_from_a_dataclass_are_the_jobs_own(tmp_path):
    root = make_repo(tmp_path / "job", FILES)
    args = ["--train-iters", "500000", "--lr", "3e-4"]
    a = analyze_script(root / "train.py", root, args)
    for flag, default in (("--train-iters", "None"), ("--save", "None"), ("--tensorboard-dir", "None"),
                          ("--persistent-save-interval", "None"), ("--no-bias-gelu-fusion", "False"),
                          ("--disable-bias-gelu-fusion", "False"), ("--use-flash", "False")):
        assert a.flags[flag] == default, flag
    assert "--internal-only" not in a.flags and "--bias-gelu-fusion" not in a.flags
    rows = {c.what: (c.how, c.flags) for c in propose(a, 30, args=args)}
    assert rows["total steps cut to 30 (was 500000)"] == ("--train-iters=30", ["--train-iters=30"])
    # the tracker's module is read before the one that declares `--tensorboard-dir`
    assert rows["tensorboard tracker off (pkg/logging.py:5)"] == ("--tensorboard-dir left out (default None)", [])
    assert rows["torch.save off (train.py:15)"] == ("--save left out (default None)", [])
    assert not any(r.startswith("all outputs") for r in rows)  # `--save` given would save
    assert check_run("python train.py --train-iters 30 --no-bias-gelu-fusion --use-flash --lr 1", root, a).problems \
        == []
    assert check_run("python train.py --internal-only 4", root, a).problems == [
        "--internal-only is not an option of train.py"]


def test_a_class_outside_the_repo_is_said_not_read(tmp_path):
    files = {**FILES, "pkg/arguments.py": ARGUMENTS.replace("from pkg.config import", "from megatron_cfg import")}
    root = make_repo(tmp_path / "job", files)
    a = analyze_script(root / "train.py", root)
    assert "--train-iters" not in a.flags
    assert any("the options made from TrainingConfig are not read" in n for n in a.notes)


def test_inherited_fields_through_a_relative_reexport_are_options_and_the_factorys_own_call_is_read(tmp_path):
    """Megatron's shape: `from .training import TrainingConfig` in the package's `__init__`, `TrainingConfig(
    ParallelConfig)` with the base in a sibling module (its fields are options too), the factory's own
    `add_argument(*arg_names)`, and `parse_known_args` only under a parameter that defaults to False: every flag
    is known, so `check` proves the run line instead of warning."""
    config = CONFIG.replace("class TrainingConfig:", "class TrainingConfig(ParallelConfig):").replace(
        "from dataclasses import", "from .parallel import ParallelConfig\nfrom dataclasses import")
    arguments = ARGUMENTS.replace("def parse_args():", "def parse_args(ignore_unknown_args=False):").replace(
        "    return parser.parse_args()", "    if ignore_unknown_args:\n        args, _ = parser.parse_known_args()\n"
        "    else:\n        args = parser.parse_args()\n    return args")
    factory = ("class ArgumentGroupFactory:\n    def build_group(self, parser, title=None):\n"
               "        for arg_names, kwargs in self.fields:\n            parser.add_argument(*arg_names, **kwargs)\n")
    root = make_repo(tmp_path / "job", {**FILES, "pkg/config/__init__.py": "from .training import TrainingConfig\n",
                                        "pkg/config/training.py": config, "pkg/arguments.py": arguments,
                                        "pkg/utils.py": factory, "pkg/config/parallel.py":
                                        "from dataclasses import dataclass\n\n@dataclass\nclass ParallelConfig:\n"
                                        "    sequence_parallel: bool = False\n    tensor_size: int = 1\n"})
    a = analyze_script(root / "train.py", root)
    assert (a.flags.get("--sequence-parallel"), a.flags.get("--tensor-size"), a.parser_open) == ("False", "1", None)
    assert check_run("python train.py --sequence-parallel --tensor-size 2 --train-iters 30", root, a).problems == []
    assert check_run("python train.py --sequence-paralel", root, a).problems == [
        "--sequence-paralel is not an option of train.py"]
