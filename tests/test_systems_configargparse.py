"""configargparse jobs: argparse's flags, and the values of the config file an `is_config_file` option names,
each with its file:line (wamf_tui/read/systems/configargparse_cli.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

RUN = """\
import configargparse
import torch


def config_parser():
    parser = configargparse.ArgumentParser()
    parser.add_argument("--config", is_config_file=True, help="config file path")
    parser.add_argument("--basedir", type=str, default="./logs/")
    parser.add_argument("--N_rand", type=int, default=32 * 32 * 4)
    parser.add_argument("--no_batching", action="store_true")
    return parser


def train():
    args = config_parser().parse_args()
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(200001):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    train()
"""
CONFIG = "# lego\nbasedir = ./runs\n\nN_rand = 1024\nno_batching = True\nunknown_key = 3\n"


def test_the_config_file_sets_values_and_the_run_line_takes_argparse_flags(tmp_path):
    root = make_repo(tmp_path / "job", {"run.py": RUN, "configs/lego.txt": CONFIG})
    command = ["--config", "configs/lego.txt", "--N_rand", "512"]
    a = analyze_script(root / "run.py", root, command)
    assert a.config_system == "configargparse"
    assert {k: (r.value, r.source) for k, r in a.resolved.items()} == {
        "--config": ("configs/lego.txt", "command"), "--basedir": ("./runs", "configs/lego.txt:2"),
        "--N_rand": ("512", "command"), "--no_batching": ("True", "configs/lego.txt:5")}
    assert (accepts(a, "--basedir=x"), accepts(a, "--basedi=x"), accepts(a, "--unknown_key=3")) == (
        "proven", "proven", "refused")
    bad = check_run("python run.py --config configs/lego.txt --expname x", root, a)
    assert bad.problems == ["--expname is not an option of run.py"]


def test_a_data_path_the_config_file_gives_that_is_not_here_is_asked_for(tmp_path):
    """`datadir = ./data/lego` in the named config, absent from the checkout: the check names it, as required."""
    run = RUN.replace('    parser.add_argument("--no_batching"', '    parser.add_argument("--datadir", type=str)\n'
                      '    parser.add_argument("--no_batching"')
    root = make_repo(tmp_path / "job", {"run.py": run, "configs/lego.txt": "datadir = ./data/lego\n",
                                        "configs/here.txt": "datadir = ./configs\n"})
    a = analyze_script(root / "run.py", root, ["--config", "configs/lego.txt"])
    assert [(r.name, r.file, r.line) for r in a.required] == [("--datadir", "configs/lego.txt", 1)]
    assert check_run("python run.py --config configs/lego.txt", root, a).problems == ["run.py requires --datadir"]
    assert check_run("python run.py --config configs/lego.txt --datadir /d", root, a).problems == []
    assert analyze_script(root / "run.py", root, ["--config", "configs/here.txt"]).required == []


def test_a_default_config_file_whose_data_path_is_not_here_asks_for_a_config_of_ones_own(tmp_path):
    """BLIP: `--config` defaults to ./configs/caption_coco.yaml, read with yaml.load; its `image_root` is the
    authors' cluster folder and no flag overrides a key: the user's own config is asked for, at that key's
    line; one the command names whose paths are here is not."""
    train = ("import argparse\nimport yaml\np = argparse.ArgumentParser()\n"
             "p.add_argument('--config', default='./configs/caption_coco.yaml')\nargs = p.parse_args()\n"
             "config = yaml.load(open(args.config, 'r'), Loader=yaml.Loader)\n")
    root = make_repo(tmp_path / "job", {"train.py": train, "data/images/x.jpg": "",
                                        "configs/caption_coco.yaml": "image_root: '/export/share/coco/images/'\n",
                                        "configs/mine.yaml": "image_root: 'data/images'\n"})
    a = analyze_script(root / "train.py", root)
    assert [(r.name, r.kind, r.file, r.line) for r in a.required] == [
        ("--config", "option", "configs/caption_coco.yaml", 1)]
    assert check_run("python train.py", root, a).problems == ["train.py requires --config"]
    assert analyze_script(root / "train.py", root, ["--config", "configs/mine.yaml"]).required == []
