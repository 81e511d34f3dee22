"""argparse flags added from a dict of defaults by a helper's loop (OpenAI's diffusion scripts): the keys,
read from the dict literal, its updates and the repo functions returning one, are the flags
(wamf_tui/read/dict_options.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

UTIL = """\
def model_defaults():
    return dict(image_size=64, num_channels=128)


def diffusion_defaults():
    res = dict(diffusion_steps=1000)
    res.update(noise_schedule="linear")
    return res


def all_defaults():
    res = model_defaults()
    res.update(diffusion_defaults())
    return res


def add_dict_to_argparser(parser, default_dict):
    for k, v in default_dict.items():
        parser.add_argument(f"--{k}", default=v, type=type(v))
"""
TRAIN = """\
import argparse

import torch

from lib.script_util import add_dict_to_argparser, all_defaults


def main():
    args = create_argparser().parse_args()
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    for step in range(args.iterations):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()


def create_argparser():
    defaults = dict(data_dir="", iterations=150000, lr=3e-4, batch_size=4)
    defaults.update(all_defaults())
    parser = argparse.ArgumentParser()
    add_dict_to_argparser(parser, defaults)
    return parser


if __name__ == "__main__":
    main()
"""


def test_the_dicts_keys_are_the_flags(tmp_path):
    root = make_repo(tmp_path / "job", {"lib/__init__.py": "", "lib/script_util.py": UTIL, "train.py": TRAIN})
    a = analyze_script(root / "train.py", root)
    assert a.parser_open is None
    assert a.flags == {"--data_dir": "''", "--iterations": "150000", "--lr": "0.0003", "--batch_size": "4",
                       "--image_size": "64", "--num_channels": "128", "--diffusion_steps": "1000",
                       "--noise_schedule": "'linear'"}
    assert [accepts(a, w) for w in ("--iterations=3", "--image_size=128", "--nope=1")] == [
        "proven", "proven", "refused"]
    assert propose(a, 30)[0].flags == ["--iterations=30"]


def test_a_dict_not_read_whole_leaves_the_parser_open(tmp_path):
    """`defaults.update(**elsewhere)` or a dict built at run time: its keys cannot all be known."""
    train = TRAIN.replace("defaults.update(all_defaults())", "defaults.update(load_from_disk())")
    root = make_repo(tmp_path / "job", {"lib/__init__.py": "", "lib/script_util.py": UTIL, "train.py": train})
    a = analyze_script(root / "train.py", root)
    assert a.parser_open is not None and "--iterations" not in a.flags
