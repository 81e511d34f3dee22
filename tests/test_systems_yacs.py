"""yacs `CfgNode` jobs: argparse's own flags, then `KEY VALUE` pairs after the opts flag (or as a positional
`opts`), each key proven from the `_C.X.Y = ...` defaults the entry imports (wamf_tui/read/systems/yacs_opts.py)."""

from __future__ import annotations

import pytest
from conftest import make_repo

from wamf_tui.detect.launch import parse_launch
from wamf_tui.model import InitState
from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.run_line import run_command
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

DEFAULTS = """\
from yacs.config import CfgNode as CN

_C = CN()
_C.MODEL = CN()
_C.MODEL.DEVICE = "cuda"
_C.SOLVER = CN()
_C.SOLVER.MAX_ITER = 40000
_C.SOLVER.BASE_LR = 0.01
_C.OUTPUT_DIR = "/home/someone/logs"
"""
PACKAGE = "from .defaults import _C as cfg\n"
TRAIN = """\
import argparse
import sys

import torch

sys.path.append(".")
from config import cfg


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config_file", default="", type=str)
    parser.add_argument({opts}, default=None, nargs=argparse.REMAINDER)
    args = parser.parse_args()
    if args.config_file:
        cfg.merge_from_file(args.config_file)
    cfg.merge_from_list(args.opts)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=cfg.SOLVER.BASE_LR)
    for it in range(cfg.SOLVER.MAX_ITER):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()
    torch.save(model.state_dict(), cfg.OUTPUT_DIR + "/model.pth")


if __name__ == "__main__":
    main()
"""


def job(tmp_path, opts: str):
    root = make_repo(tmp_path / "job", {"tools/train.py": TRAIN.replace("{opts}", opts),
                                        "config/__init__.py": PACKAGE, "config/defaults.py": DEFAULTS})
    return root, analyze_script(root / "tools/train.py", root)


@pytest.mark.parametrize(("opts", "run"), [
    ('"--opts"', "python tools/train.py --config_file c.yml --opts SOLVER.MAX_ITER 30 OUTPUT_DIR {out}"),
    ('"opts"', "python tools/train.py --config_file c.yml SOLVER.MAX_ITER 30 OUTPUT_DIR {out}"),
])
def test_changes_are_key_value_pairs_after_the_opts_flag(tmp_path, opts, run):
    root, a = job(tmp_path, opts)
    run = run.format(out=f"{root}.wamf-bench")  # beside the checkout, never in it
    assert a.config_system == "yacs"
    assert a.flags["SOLVER.MAX_ITER"] == "40000" and a.flags["MODEL.DEVICE"] == "'cuda'"
    changes = propose(a, 30)
    assert changes[0].flags == ["SOLVER.MAX_ITER", "30"] and changes[0].how == "SOLVER.MAX_ITER 30"
    assert [c.flags for c in changes if c.what == "all outputs into one folder"] == [["OUTPUT_DIR", "$WAMF_OUT"]]
    launch = parse_launch("python tools/train.py --config_file c.yml", exists={"tools/train.py"}.__contains__)
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="tools/train.py",
                      launch=launch, analysis=a, changes=changes)
    assert run_command(state).endswith(run.removeprefix("python ")) and "WAMF_SEED=0" in run_command(state)
    verdict = check_run(run, root, a)
    assert (verdict.problems, verdict.warnings) == ([], [])


def test_a_key_the_defaults_lack_is_refused(tmp_path):
    """merge_from_list raises on a key not in the defaults: the check fails, and the app never adds one."""
    root, a = job(tmp_path, '"--opts"')
    assert accepts(a, "SOLVER.MAX_ITERS") == "refused" and accepts(a, "SOLVER.MAX_ITER") == "proven"
    verdict = check_run("python tools/train.py --opts SOLVER.MAX_ITERS 30 MODEL.DEVICE", root, a)
    assert verdict.problems == [
        "the opts list of train.py takes KEY VALUE pairs; MODEL.DEVICE has no value",
        "SOLVER.MAX_ITERS is not a key of train.py's config defaults"]


def test_the_opts_list_of_the_command_keeps_its_pairs_and_gets_the_changes_after_them(tmp_path):
    root, a = job(tmp_path, '"--opts"')
    launch = parse_launch("python tools/train.py --opts MODEL.DEVICE cpu", exists={"tools/train.py"}.__contains__)
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"), script="tools/train.py",
                      launch=launch, analysis=a, changes=propose(a, 30, "speed", launch.args))
    run = run_command(state)
    assert run.endswith(f"tools/train.py --opts MODEL.DEVICE cpu SOLVER.MAX_ITER 30 OUTPUT_DIR {root}.wamf-bench")
    assert run.count("--opts") == 1


def test_values_resolve_over_the_defaults_from_the_config_file_the_command_names(tmp_path):
    """`cfg.merge_from_file(args.config_file)`: its values win over `_C`'s, the command's opts over both;
    each value keeps where it came from."""
    root = make_repo(tmp_path / "job", {"tools/train.py": TRAIN.replace("{opts}", '"--opts"'),
                                        "config/__init__.py": PACKAGE, "config/defaults.py": DEFAULTS,
                                        "configs/small.yml": "SOLVER:\n  BASE_LR: 0.1\n  MAX_ITER: 500\n"})
    command = ["--config_file", "configs/small.yml", "--opts", "SOLVER.BASE_LR", "0.5"]
    a = analyze_script(root / "tools/train.py", root, command)
    assert {k: (r.value, r.source) for k, r in a.resolved.items() if k.startswith("SOLVER.")} == {
        "SOLVER.MAX_ITER": ("500", "configs/small.yml:3"), "SOLVER.BASE_LR": ("0.5", "command")}
    assert a.resolved["MODEL.DEVICE"].source == "default"
    assert propose(a, 30, "speed", command)[0].what == "total steps cut to 30 (was 500, configs/small.yml:3)"


def test_a_weights_file_the_config_names_that_is_not_here_is_a_key_the_command_must_give(tmp_path):
    """reid-strong-baseline: `PRETRAIN_PATH: '/home/author/.torch/models/resnet50.pth'` in the config the command
    names, absent here: the key is asked for, as a `KEY VALUE` pair of the opts list; a file that is here is not."""
    defaults = DEFAULTS + '_C.MODEL.PRETRAIN_PATH = ""\n'
    root = make_repo(tmp_path / "job", {"tools/train.py": TRAIN.replace("{opts}", '"opts"'),
                                        "config/__init__.py": PACKAGE, "config/defaults.py": defaults,
                                        "configs/r50.yml": "MODEL:\n  PRETRAIN_PATH: '/home/author/r50.pth'\n",
                                        "configs/here.yml": "MODEL:\n  PRETRAIN_PATH: 'weights/r50.pth'\n",
                                        "weights/r50.pth": "not really weights\n"})
    a = analyze_script(root / "tools/train.py", root, ["--config_file", "configs/r50.yml"])
    assert [(r.name, r.kind, r.file, r.line) for r in a.required] == [
        ("MODEL.PRETRAIN_PATH", "key", "configs/r50.yml", 2)]
    assert check_run("python tools/train.py --config_file configs/r50.yml", root, a).problems == [
        "train.py requires MODEL.PRETRAIN_PATH"]
    given = "python tools/train.py --config_file configs/r50.yml MODEL.PRETRAIN_PATH /w/r50.pth"
    assert check_run(given, root, a).problems == []
    assert analyze_script(root / "tools/train.py", root, ["--config_file", "configs/here.yml"]).required == []


def test_a_readmes_your_placeholder_in_an_opts_pair_leaves_the_pair_out():
    """`MODEL.DEVICE_ID "('your device id')"`: the reader's value to fill; the key goes with it (a key alone
    would shift every pair after it), and the other pairs stay."""
    launch = parse_launch("python3 tools/train.py --config_file='c.yml' MODEL.DEVICE_ID \"('your device id')\" "
                          "DATASETS.NAMES \"('market1501')\" OUTPUT_DIR \"('your path to save logs')\"")
    assert launch is not None
    assert launch.args == ["--config_file=c.yml", "DATASETS.NAMES", "('market1501')"]
    assert launch.unresolved == ["your device id", "your path to save logs"]


LIBRARY = {  # detectron2's shape: the parser and the defaults live in the package the entry imports
    "lib/__init__.py": "",
    "lib/config/__init__.py": "from .config import get_cfg\nfrom .lazy import LazyConfig\n",
    "lib/config/config.py": "def get_cfg():\n    from .defaults import _C\n    return _C.clone()\n",
    "lib/config/defaults.py": DEFAULTS,
    "lib/config/lazy.py": "from omegaconf import OmegaConf\n\n\nclass LazyConfig:\n"
                          "    def apply_overrides(self, cfg):\n"
                          "        from hydra.core.override_parser.overrides_parser import OverridesParser\n",
    "lib/utils.py": "def locate(name):\n    from hydra.utils import _locate\n    return _locate(name)\n",
    "lib/engine.py": "import argparse\n\nfrom .utils import locate\n\n\ndef default_argument_parser():\n"
                     "    parser = argparse.ArgumentParser()\n"
                     "    parser.add_argument('--config-file', default='')\n"
                     "    parser.add_argument('opts', default=None, nargs=argparse.REMAINDER)\n"
                     "    return parser\n",
    "tools/train_net.py": "import torch\nfrom lib.config import get_cfg\n"
                          "from lib.engine import default_argument_parser\n\n\n"
                          "def main(args):\n    cfg = get_cfg()\n    cfg.merge_from_list(args.opts)\n"
                          "    model = torch.nn.Linear(2, 2)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                          "    for it in range(cfg.SOLVER.MAX_ITER):\n        model(torch.ones(2)).sum().backward()\n"
                          "        opt.step()\n\n\n"
                          "if __name__ == '__main__':\n    main(default_argument_parser().parse_args())\n",
}


def test_a_library_that_uses_hydra_and_omegaconf_inside_does_not_make_the_job_a_hydra_one(tmp_path):
    """Importing `hydra.utils` or OmegaConf in a library module is no Hydra app; the yacs defaults behind the
    package's `get_cfg` (three imports down, the last inside a function) are the job's keys."""
    root = make_repo(tmp_path / "job", LIBRARY)
    a = analyze_script(root / "tools/train_net.py", root)
    assert a.config_system == "yacs"
    assert a.flags["SOLVER.MAX_ITER"] == "40000"
    assert [c.name for c in a.step_controls if c.role == "bound"][:1] == ["SOLVER.MAX_ITER"]
