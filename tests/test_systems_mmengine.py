"""mmengine jobs: argparse's own flags, a Python config file with `_base_` inheritance read without running it
(wamf_tui/read/mm_config.py), and `--cfg-options key=value` overrides proven against the keys it sets
(wamf_tui/read/systems/mmengine_cli.py). The Runner's loop, saves, evals and seed come from that config."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.detect.launch import parse_launch
from wamf_tui.model import InitState
from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.run_line import run_command
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.mm_config import load, text

TRAIN = """\
import argparse

from mmengine.config import Config, DictAction
from mmengine.runner import Runner


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument('config', help='train config file path')
    parser.add_argument('--work-dir', help='the dir to save logs and models')
    parser.add_argument('--no-validate', action='store_true')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction)
    return parser.parse_args()


def main():
    args = parse_args()
    cfg = Config.fromfile(args.config)
    if args.cfg_options is not None:
        cfg.merge_from_dict(args.cfg_options)
    if args.work_dir is not None:
        cfg.work_dir = args.work_dir
    runner = Runner.from_cfg(cfg)
    runner.train()


if __name__ == '__main__':
    main()
"""

RUNTIME = """\
default_hooks = dict(
    logger=dict(type='LoggerHook', interval=100),
    checkpoint=dict(type='CheckpointHook', interval=1),
)
vis_backends = [dict(type='LocalVisBackend'), dict(type='WandbVisBackend')]
visualizer = dict(type='Visualizer', vis_backends=vis_backends)
randomness = dict(seed=None)
"""
SCHEDULE = """\
optim_wrapper = dict(optimizer=dict(type='SGD', lr=0.1, momentum=0.9))
train_cfg = dict(by_epoch=True, max_epochs=200, val_interval=1)
val_cfg = dict()
"""
DATA = "train_dataloader = dict(batch_size=16, dataset=dict(type='CIFAR10', data_root='data/cifar10'))\n"
DATASETS = """\
class CIFAR10:
    def __init__(self, data_root='', split='train', download: bool = True, **kwargs):
        self.data_root = data_root


class ImageNet:
    def __init__(self, data_root='', split='train', **kwargs):
        self.data_root = data_root
"""
CHILD = """\
_base_ = ['../_base_/runtime.py', '../_base_/schedule.py', '../_base_/data.py']
optim_wrapper = dict(optimizer=dict(_delete_=True, type='AdamW', lr=0.001))
train_dataloader = dict(batch_size=32)
"""
ITERS = """\
_base_ = '../_base_/runtime.py'
train_cfg = dict(type='IterBasedTrainLoop', max_iters=90000, val_interval=5000)
"""
NEW_STYLE = """\
from mmengine.config import read_base

with read_base():
    from .._base_.runtime import *
    from .._base_.schedule import *

train_cfg.update(max_epochs=100)
"""

FILES = {"tools/train.py": TRAIN, "configs/_base_/runtime.py": RUNTIME, "configs/_base_/schedule.py": SCHEDULE,
         "configs/_base_/data.py": DATA, "configs/net/child.py": CHILD, "configs/net/iters.py": ITERS,
         "configs/net/new_style.py": NEW_STYLE, "pkg/datasets/cifar.py": DATASETS}


def test_a_config_is_its_bases_merged_in_order_then_its_own_keys(tmp_path):
    root = make_repo(tmp_path / "job", FILES)
    leaves = load(root / "configs/net/child.py", root)
    assert text(leaves["train_dataloader.batch_size"]) == "32"  # the child's, merged into the base's dict
    assert text(leaves["train_dataloader.dataset.type"]) == "CIFAR10"  # kept from the base
    assert {k for k in leaves if k.startswith("optim_wrapper.")} == {  # `_delete_`: the base's dict is replaced
        "optim_wrapper.optimizer.type", "optim_wrapper.optimizer.lr"}
    assert (leaves["train_cfg.max_epochs"].file, leaves["train_cfg.max_epochs"].line) == (
        "configs/_base_/schedule.py", 2)
    assert text(leaves["randomness.seed"]) == "None" and text(leaves["val_cfg"]) == "{}"
    new = load(root / "configs/net/new_style.py", root)  # `read_base()` imports are bases too
    assert text(new["default_hooks.checkpoint.type"]) == "CheckpointHook"
    assert "train_cfg.update" not in new  # a call, not an assignment: never guessed


def test_the_runners_loop_saves_evals_trackers_and_seed_come_from_the_config(tmp_path):
    root = make_repo(tmp_path / "job", FILES)
    a = analyze_script(root / "tools/train.py", root, ["configs/net/child.py"])
    assert (a.config_system, a.kind) == ("mmengine", "training")
    roles = {c.name: (c.role, c.default) for c in a.step_controls}
    assert roles["train_cfg.max_epochs"] == ("bound", "200")
    assert roles["train_dataloader.batch_size"] == ("scale", "32")
    assert [(f.name, f.file, f.line, f.off_switch) for f in a.checkpoints] == [
        ("CheckpointHook (default_hooks.checkpoint)", "configs/_base_/runtime.py", 3, "default_hooks.checkpoint=None")]
    assert [(f.name, f.off_switch) for f in a.evals] == [("validation loop (val_cfg)", "--no-validate")]
    assert [t.name for t in a.trackers] == ["WandbVisBackend"]  # the local backend writes into work_dir
    assert [(s.name, s.off_switch) for s in a.seeds] == [("randomness.seed", "randomness.seed")]
    assert a.resolved["train_dataloader.batch_size"].source == "configs/net/child.py:3"


def test_the_run_line_caps_steps_routes_work_dir_and_sets_keys_after_cfg_options(tmp_path):
    """An epoch loop: no override cuts inside an epoch, so the wrapper caps optimizer steps; the save hook is
    dropped and the seed set as `--cfg-options` pairs, after the config file the command names."""
    root = make_repo(tmp_path / "job", FILES)
    command = ["configs/net/child.py"]
    a = analyze_script(root / "tools/train.py", root, command)
    launch = parse_launch("python tools/train.py configs/net/child.py", exists={"tools/train.py"}.__contains__)
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="tools/train.py",
                      launch=launch, analysis=a, changes=propose(a, 30, "speed", command))
    run = run_command(state)
    assert "WAMF_MAX_STEPS=30" in run
    assert run.endswith(f"tools/train.py configs/net/child.py --work-dir={root}.wamf-bench "
                        "--cfg-options default_hooks.checkpoint=None randomness.seed=0")
    verdict = check_run("python tools/train.py " + run.split("tools/train.py ", 1)[1], root, a)
    assert (verdict.problems, verdict.warnings) == ([], [])


def test_an_iteration_loop_is_capped_by_its_own_key(tmp_path):
    root = make_repo(tmp_path / "job", FILES)
    a = analyze_script(root / "tools/train.py", root, ["configs/net/iters.py"])
    cut = propose(a, 30, "speed", ["configs/net/iters.py"])[0]
    assert (cut.flags, cut.what) == (["train_cfg.max_iters=30"], "total steps cut to 30 (was 90000, "
                                      "configs/net/iters.py:2)")


def test_a_key_the_config_lacks_is_refused_and_a_bare_word_is_no_override(tmp_path):
    """mmengine adds an unknown key silently, and nothing reads it: a typo would leave the job unchanged."""
    root = make_repo(tmp_path / "job", FILES)
    a = analyze_script(root / "tools/train.py", root, ["configs/net/child.py"])
    verdict = check_run("python tools/train.py configs/net/child.py --cfg-options train_cfg.max_iter=30 "
                        "default_hooks.checkpoint.interval=5 seed", root, a)
    assert verdict.problems == ["seed is not key=value, as train.py's --cfg-options takes",
                                "train_cfg.max_iter is not a key of the config train.py reads"]


def test_a_data_root_absent_here_is_asked_for_unless_its_dataset_class_downloads_it(tmp_path):
    """CIFAR10's `download=True`: the job fills `data/cifar10` itself; ImageNet's data must be given."""
    root = make_repo(tmp_path / "job", FILES)
    a = analyze_script(root / "tools/train.py", root, ["configs/net/child.py"])
    assert a.fetched == ["train_dataloader.dataset.data_root"] and [r.name for r in a.required] == ["config"]
    files = {**FILES, "configs/_base_/data.py": DATA.replace("CIFAR10", "ImageNet")}
    root = make_repo(tmp_path / "other", files)
    b = analyze_script(root / "tools/train.py", root, ["configs/net/child.py"])
    assert [(r.name, r.file, r.line) for r in b.required] == [
        ("config", "tools/train.py", 9), ("train_dataloader.dataset.data_root", "configs/_base_/data.py", 1)]
