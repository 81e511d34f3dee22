"""draccus jobs: one flag per dataclass field by its dotted path, a ChoiceRegistry section picked with `.type`
and its chosen class's fields unknown rather than refused, a boolean that defaults on switched off with `=false`
(wamf_tui/read/systems/draccus_cli.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

PARSER = """\
import functools

import draccus


def wrap():
    def outer(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            cfg = draccus.parse(config_class=fn.__annotations__["cfg"])
            return fn(cfg, *args, **kwargs)
        return inner
    return outer
"""
CONFIGS = """\
from dataclasses import dataclass, field

import draccus


@dataclass
class DatasetConfig:
    repo_id: str
    root: str | None = None


@dataclass
class PolicyConfig(draccus.ChoiceRegistry):
    device: str = "cuda"
    push_to_hub: bool = True


@PolicyConfig.register_subclass("act")
@dataclass
class ACTConfig(PolicyConfig):
    chunk_size: int = 100


@dataclass
class TrainConfig:
    dataset: DatasetConfig
    policy: PolicyConfig | None = None
    seed: int | None = 1000
    steps: int = 100_000
    save_checkpoint: bool = True
    save_freq: int = 20_000
"""
TRAIN = """\
import torch

from lib import parser
from lib.configs import TrainConfig


@parser.wrap()
def train(cfg: TrainConfig):
    torch.manual_seed(cfg.seed)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.Adam(model.parameters())
    for step in range(1, cfg.steps + 1):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()
        if cfg.save_checkpoint and (step % cfg.save_freq == 0 or step == cfg.steps):
            torch.save(model.state_dict(), "ckpt.pt")
    if cfg.policy.push_to_hub:
        model.push_to_hub("me/model")


if __name__ == "__main__":
    train()
"""


def job(tmp_path):
    root = make_repo(tmp_path / "job", {"lib/__init__.py": "", "lib/parser.py": PARSER, "lib/configs.py": CONFIGS,
                                        "train.py": TRAIN})
    return root, analyze_script(root / "train.py", root)


def test_flags_are_the_dotted_fields_and_a_choice_takes_its_type(tmp_path):
    root, a = job(tmp_path)
    assert a.config_system == "draccus"
    assert {k: a.flags[k] for k in ("--dataset.repo_id", "--policy.push_to_hub", "--steps", "--policy.type")} == {
        "--dataset.repo_id": None, "--policy.push_to_hub": "True", "--steps": "100000", "--policy.type": None}
    assert [accepts(a, w) for w in ("--steps=3", "--policy.type=act", "--policy.chunk_size=2", "--step=3",
                                    "--repo_id=x")] == ["proven", "proven", "unknown", "refused", "refused"]
    assert accepts(a, "--policy.chunk_size=2", ["--policy.chunk_size=4"]) == "proven"  # the docs' own line gives it
    bad = check_run("python train.py --dataset.repo_id=x --step=3", root, a)
    assert bad.problems and "--step" in bad.problems[0]


def test_a_save_and_an_upload_that_default_on_are_switched_off_with_false(tmp_path):
    root, a = job(tmp_path)
    flags = [f for c in propose(a, 30) if c.enabled for f in c.flags]
    assert "--steps=30" in flags
    assert "--save_checkpoint=false" in flags  # the save at the last step runs whatever save_freq is
    assert "--policy.push_to_hub=false" in flags
    ok = check_run("python train.py --dataset.repo_id=x --policy.type=act " + " ".join(flags), root, a)
    assert ok.problems == []


def test_pyrallis_reads_a_command_the_same_way(tmp_path):
    entry = ("from dataclasses import dataclass\n\nimport pyrallis\nimport torch\n\n\n@dataclass\nclass Cfg:\n"
             "    max_steps: int = 1000\n    lr: float = 0.1\n\n\n@pyrallis.wrap()\ndef main(cfg: Cfg):\n"
             "    model = torch.nn.Linear(2, 2)\n    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)\n"
             "    for _ in range(cfg.max_steps):\n        model(torch.ones(2)).sum().backward()\n"
             "        opt.step()\n\n\nif __name__ == '__main__':\n    main()\n")
    root = make_repo(tmp_path / "job", {"train.py": entry})
    a = analyze_script(root / "train.py", root)
    assert a.config_system == "draccus" and a.flags["--max_steps"] == "1000"
    assert propose(a, 30)[0].flags == ["--max_steps=30"]
