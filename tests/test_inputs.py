"""Inputs a job needs although its parser declares none required (wamf_tui/read/inputs.py), on real
fixture scripts read by the analyzer, and the verdict `check` gives a run line that leaves them out."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.needs import missing_inputs, say_missing
from wamf_tui.read.values import defaults, truth

DATA_ROOT = """\
import argparse
import torch
from torchvision.datasets import ImageFolder

p = argparse.ArgumentParser()
p.add_argument("data", nargs="?", default=None)
p.add_argument("--data-dir", default=None)
p.add_argument("--epochs", type=int, default=3)
{extra}

def main():
    args = p.parse_args()
    if args.data and not args.data_dir:
        args.data_dir = args.data
    dataset = ImageFolder(root=args.data_dir)
    model = torch.nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(args.epochs):
        for x, y in dataset:
            loss = model(x).sum()
            loss.backward()
            opt.step()

if __name__ == "__main__":
    main()
"""

ONE_OF = """\
from dataclasses import dataclass, field
import torch
from transformers import HfArgumentParser
from mylib import DataArgs

@dataclass
class ScriptArgs:
    lr: float = 1e-3

def main(script_args, data_args):
    if data_args.datasets and data_args.dataset_name:
        ds = load(data_args.datasets)
    elif data_args.datasets:
        ds = load(data_args.datasets)
    elif data_args.dataset_name:
        ds = load(data_args.dataset_name)
    else:
        raise ValueError({message!r})
    train(ds)

if __name__ == "__main__":
    parser = HfArgumentParser((ScriptArgs, DataArgs))
    script_args, data_args = parser.parse_args_into_dataclasses()
    main(script_args, data_args)
"""


def _write(root: Path, text: str) -> Path:
    script = root / "train.py"
    script.write_text(text)
    return script


def test_a_none_default_handed_to_the_dataset_as_its_root_is_required(tmp_path):
    a = analyze_script(_write(tmp_path, DATA_ROOT.format(extra="")), tmp_path)
    [req] = [r for r in a.required if r.name == "--data-dir"]
    assert (req.kind, req.file, req.line) == ("option", "train.py", 15)
    assert [r.name for r in missing_inputs(a.required, ["--epochs", "1"], set())] == ["--data-dir"]
    assert missing_inputs(a.required, ["--data-dir", "/data"], set()) == []
    assert check_run("python train.py --epochs 1", tmp_path, a).problems == ["train.py requires --data-dir"]
    assert check_run("python train.py --data-dir /d --epochs 1", tmp_path, a).problems == []


def test_a_data_root_with_a_default_is_not_required(tmp_path):
    text = DATA_ROOT.format(extra="").replace('"--data-dir", default=None', '"--data-dir", default="data/"')
    a = analyze_script(_write(tmp_path, text), tmp_path)
    assert a.required == []


def test_a_data_root_read_only_in_a_branch_is_not_required(tmp_path):
    text = DATA_ROOT.format(extra="").replace("    dataset = ImageFolder(root=args.data_dir)\n",
                                              "    dataset = []\n    if args.epochs > 5:\n"
                                              "        dataset = ImageFolder(root=args.data_dir)\n")
    a = analyze_script(_write(tmp_path, text), tmp_path)
    assert a.required == []


def test_a_data_root_through_a_local_or_gives_both_ways(tmp_path):
    text = DATA_ROOT.format(extra='p.add_argument("--data-root", default=None)').replace(
        "    dataset = ImageFolder(root=args.data_dir)\n",
        "    where = args.data_root or args.data_dir\n    dataset = ImageFolder(root=where)\n")
    a = analyze_script(_write(tmp_path, text), tmp_path)
    [req] = a.required
    assert [req.name, *req.alternatives] == ["--data-root", "--data-dir"]
    assert missing_inputs(a.required, ["--data-dir", "x"], set()) == []


def test_an_else_that_raises_naming_unknown_fields_requires_one_of_them(tmp_path):
    message = "Either `datasets` or `dataset_name` must be provided."
    a = analyze_script(_write(tmp_path, ONE_OF.format(message=message)), tmp_path)
    [req] = a.required
    assert ([req.name, *req.alternatives], req.line) == (["--datasets", "--dataset_name"], 11)
    assert missing_inputs(a.required, ["--dataset_name", "x"], set()) == []
    assert [r.name for r in missing_inputs(a.required, ["--lr", "1"], set())] == ["--datasets"]


def test_an_else_that_raises_without_naming_unknown_fields_requires_nothing(tmp_path):
    a = analyze_script(_write(tmp_path, ONE_OF.format(message="no data")), tmp_path)
    assert a.required == []


def test_an_if_that_raises_on_a_none_default_requires_it(tmp_path):
    text = ("import argparse\np = argparse.ArgumentParser()\np.add_argument('--config', default=None)\n"
            "p.add_argument('--resume', default=None)\nargs = p.parse_args()\n"
            "if args.config is None:\n    raise SystemExit('give a config')\n"
            "if args.resume is not None and not args.resume.endswith('.pt'):\n    raise SystemExit('bad')\n")
    a = analyze_script(_write(tmp_path, text), tmp_path)
    assert [(r.name, r.line) for r in a.required] == [("--config", 6)]


@pytest.mark.parametrize(("condition", "expected"), [
    ("a.x", False), ("not a.x", True), ("a.x is None", True), ("a.x is not None", False), ("a.n == 3", True),
    ("a.n != 3", False), ("a.x or a.n", True), ("a.x and a.n", False), ("a.x or f()", None), ("a.x and f()", False),
    ("a.flag", True), ("a.other", None), ("self.x", None), ("a.n > 2", True), ("a.n <= 2", False),
    ("a.s > 2", None), ("a.n >= a.x", None), ("a.s == 'all'", True),
])
def test_truth_at_the_defaults(condition, expected):
    values = defaults({"--x": None, "--n": "3", "--flag": "True", "--s": "'all'", "--other": "os.getcwd()"},
                      frozenset({"a"}))
    assert truth(ast.parse(condition, mode="eval").body, values) is expected


SAVES_ALWAYS = """\
import argparse
import os
import torch

p = argparse.ArgumentParser()
p.add_argument("--model-tag", type=str, default=None)
p.add_argument("--depth", type=int, default=12)
p.add_argument("--num-iterations", type=int, default=100)
args = p.parse_args()
base_dir = os.path.expanduser("~/.cache/job")
output_dirname = args.model_tag if args.model_tag else f"d{args.depth}"
checkpoint_dir = os.path.join(base_dir, "base_checkpoints", output_dirname)
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.num_iterations + 1):
    last_step = step == args.num_iterations
    if last_step:
        save_checkpoint(checkpoint_dir, step, model.state_dict())
        break
    loss = model(torch.randn(1, 2)).sum()
    loss.backward()
    opt.step()
"""


def test_a_save_no_switch_stops_writes_into_a_folder_named_for_the_benchmark(tmp_path):
    """nanochat: the last step always saves into `base_checkpoints/<model tag or d<depth>>`, beside the user's
    real checkpoints: the run line names that folder for the benchmark (`--model-tag=wamf-bench`)."""
    from wamf_tui.propose.benchmark import propose

    a = analyze_script(_write(tmp_path, SAVES_ALWAYS), tmp_path)
    assert [(c.name, c.folder) for c in a.checkpoints] == [("save_checkpoint", "--model-tag")]
    flags = [f for c in propose(a, 30) for f in c.flags]
    assert "--model-tag=wamf-bench" in flags and "--num-iterations=30" in flags
    given = propose(a, 30, args=["--model-tag", "mine"])  # the real run's own name: replaced, never written over
    row = next(c for c in given if "--model-tag=wamf-bench" in c.flags)
    assert row.drop == ["--model-tag"]


def test_no_folder_name_from_the_saved_object_nor_from_an_input_path(tmp_path):
    """word_language_model saves `torch.save(model, f)`, its model built from `--model LSTM`: that name is
    the job's model, not a folder; `--ft_path` is a checkpoint to load: pointing it elsewhere breaks the job."""
    text = SAVES_ALWAYS.replace('p.add_argument("--depth", type=int, default=12)',
                                'p.add_argument("--model", type=str, default="LSTM")\n'
                                'p.add_argument("--ft_path", type=str, default=None)')
    text = text.replace('output_dirname = args.model_tag if args.model_tag else f"d{args.depth}"',
                        "output_dirname = args.ft_path or 'ckpt'\nnet = build(args.model)")
    text = text.replace("save_checkpoint(checkpoint_dir, step, model.state_dict())", "torch.save(net, checkpoint_dir)")
    a = analyze_script(_write(tmp_path, text), tmp_path)
    assert [(c.name, c.folder) for c in a.checkpoints] == [("torch.save", None)]


def test_a_setting_an_error_names_is_not_taken_as_unset_where_a_config_file_the_command_names_may_set_it(tmp_path):
    text = ("import sys\nfrom cfg import TrainConfig\n\ndef main(cfg):\n    if cfg.run_name is None:\n"
            "        raise ValueError('--run_name is required')\n\n"
            "if __name__ == '__main__':\n    yaml_path, rest = sys.argv[1], sys.argv[2:]\n"
            "    main(TrainConfig.load(yaml_path, rest))\n")
    a = analyze_script(_write(tmp_path, text), tmp_path)
    assert [(r.name, r.kind) for r in a.required] == [("yaml_path", "positional")]
    no_file = text.replace("yaml_path, rest = sys.argv[1], sys.argv[2:]", "yaml_path, rest = 'x.yaml', []")
    assert [r.name for r in analyze_script(_write(tmp_path, no_file), tmp_path).required] == ["--run_name"]


def test_a_missing_positional_is_said_with_the_placeholder_the_docs_write_for_it():
    from wamf_tui.model import Required
    req = [Required(name="yaml_path", kind="positional", file="t.py", line=3),
           Required(name="--data", kind="option", file="t.py", line=4)]
    assert say_missing(req, ["{path_to_train_config}"]) == \
        "the positional argument yaml_path ({path_to_train_config} in the docs), --data"
    assert say_missing(req) == "the positional argument yaml_path, --data"


FNAME = """\
import argparse
import yaml
import torch

parser = argparse.ArgumentParser()
parser.add_argument('--fname', type=str, default='configs.yaml')
args = parser.parse_args()
with open(args.fname) as y:
    params = yaml.load(y, Loader=yaml.FullLoader)
model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    model(torch.randn(2, 4)).sum().backward()
    opt.step()
"""

TEMPLATE = """\
data:
  batch_size: 128
  root_path: $replace_this_with_absolute_path_to_your_datasets_directory
  tokens: ["<pad>", "<|endoftext|>"]
logging:
  folder: $replace_this_with_path_for_experiment_logs/vith14/
  write_tag: jepa
"""


def test_a_config_the_command_names_that_leaves_values_to_fill_is_a_required_input(tmp_path):
    """I-JEPA's shipped YAML keeps `$replace_this_with_...` where the data and log folders go: on it as it is the
    job cannot start, so the run line needs a filled config of the user's own in its place (never `<pad>`)."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs/in1k.yaml").write_text(TEMPLATE)
    (tmp_path / "configs/mine.yaml").write_text(TEMPLATE.replace("$replace_this_with_", "/data/"))
    script = _write(tmp_path, FNAME)
    a = analyze_script(script, tmp_path, ["--fname", "configs/in1k.yaml"])
    [req] = [r for r in a.required if r.kind == "template"]
    assert (req.name, req.file) == ("data.root_path, logging.folder", "configs/in1k.yaml")
    problems = check_run("python train.py --fname configs/in1k.yaml", tmp_path, a).problems
    assert problems == ["train.py requires a config of your own in place of configs/in1k.yaml, which leaves "
                        "data.root_path, logging.folder to fill"]
    assert check_run("python train.py --fname /home/me/in1k.yaml", tmp_path, a).problems == []
    filled = analyze_script(script, tmp_path, ["--fname", "configs/mine.yaml"])
    assert not [r for r in filled.required if r.kind == "template"]
