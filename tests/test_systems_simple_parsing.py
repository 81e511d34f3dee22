"""simple_parsing jobs: one flag per dataclass field, nested fields flattened, positionals apart; an unknown
flag is refused (wamf_tui/read/systems/simple_parsing_cli.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

TRAINER = """\
from dataclasses import dataclass

from simple_parsing import Serializable


@dataclass
class CoderConfig(Serializable):
    k: int = 32


@dataclass
class TrainConfig(Serializable):
    sae: CoderConfig
    batch_size: int = 32
    max_steps: int = 10000
    log_to_wandb: bool = True
    save_dir: str = "checkpoints"
"""
MAIN = """\
from dataclasses import dataclass

import torch
from simple_parsing import field, parse

from .trainer import TrainConfig


@dataclass
class RunConfig(TrainConfig):
    model: str = field(default="gpt2", positional=True)
    ctx_len: int = 2048


def run():
    args = parse(RunConfig)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.max_steps):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    run()
"""


def test_flags_are_the_dataclass_fields_and_nothing_else(tmp_path):
    root = make_repo(tmp_path / "job", {"pkg/__init__.py": "", "pkg/__main__.py": MAIN, "pkg/trainer.py": TRAINER})
    a = analyze_script(root / "pkg/__main__.py", root)
    assert a.config_system == "simple_parsing"
    assert a.flags == {"--k": "32", "--batch_size": "32", "--max_steps": "10000", "--log_to_wandb": "True",
                       "--save_dir": "'checkpoints'", "--ctx_len": "2048"}
    flags = {c.what: c.flags for c in propose(a, 30)}
    assert flags["total steps cut to 30 (was 10000)"] == ["--max_steps=30"]
    assert flags["all outputs into one folder"] == ["--save_dir=$WAMF_OUT"]
    assert [accepts(a, w) for w in ("--nolog_to_wandb", "--k=4", "--model=x", "--max_step=3")] == [
        "proven", "proven", "refused", "refused"]
    ok = check_run("python -m pkg gpt2 --max_steps=30 --save_dir=runs/x", root, a)
    assert (ok.problems, ok.warnings) == ([], [])
    bad = check_run("python -m pkg --max_step=30", root, a)
    assert bad.problems == [
        "--max_step is not among the parameters (or dataclass fields) __main__.py's simple_parsing is made from"]
