"""argbind jobs: the bound functions' keyword parameters as `--param` (bound without prefix) or
`--Func.param`, the values of the `--args.load` file and its `$include`s, each with its file:line, and the run
line held to exact names (wamf_tui/read/systems/argbind_cli.py)."""

from __future__ import annotations

from conftest import make_repo

from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.settings import accepts

TRAIN = """\
import argbind
import torch
from lib import models

Net = argbind.bind(models.Net)


@argbind.bind("train", "val")
def build_dataset(folders: dict = None, sample_rate: int = 44100):
    return folders


@argbind.bind(without_prefix=True)
def train(args, save_path: str = "ckpt", num_iters: int = 250000, batch_size: int = 12):
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(num_iters):
        loss = model(torch.ones(2)).sum()
        loss.backward()
        opt.step()
        torch.save(model.state_dict(), f"{save_path}/last.pt")


if __name__ == "__main__":
    args = argbind.parse_args()
    with argbind.scope(args):
        train(args)
"""
FILES = {"train.py": TRAIN, "conf/base.yml": "num_iters: 400000\nbatch_size: 72\n",
         "conf/exp.yml": "$include:\n  - conf/base.yml\nbatch_size: 12\ntrain/build_dataset.sample_rate: 24000\n"}


def test_the_bound_parameters_are_its_flags_and_the_loaded_file_its_values(tmp_path):
    root = make_repo(tmp_path / "job", FILES)
    a = analyze_script(root / "train.py", root, ["--args.load", "conf/exp.yml", "--num_iters", "9"])
    assert a.config_system == "argbind"
    assert {"--save_path", "--num_iters", "--batch_size", "--build_dataset.folders", "--build_dataset.sample_rate",
            "--args.load"} <= set(a.flags)
    assert "--args" not in a.flags and "--train.save_path" not in a.flags  # no default: not bound; no prefix
    assert {k: (r.value, r.source) for k, r in a.resolved.items() if r.source != "default"} == {
        "--args.load": ("conf/exp.yml", "command"), "--num_iters": ("9", "command"),
        "--batch_size": ("12", "conf/exp.yml:3"), "--train/build_dataset.sample_rate": ("24000", "conf/exp.yml:4")}
    assert [o.name for o in a.output_dirs if o.off_switch == o.name] == ["--save_path"]


def test_only_exact_names_are_taken_and_a_librarys_bound_parameters_are_not_refused(tmp_path):
    root = make_repo(tmp_path / "job", FILES)
    a = analyze_script(root / "train.py", root, [])
    assert [accepts(a, w) for w in ("--save_path=x", "--val/build_dataset.folders=x", "--num_it=5",
                                    "--build_dataset.nope=1", "--Net.width=3")] == [
        "proven", "proven", "refused", "refused", "unknown"]
    verdict = check_run("python train.py --args.load conf/exp.yml --num_it 5 --Net.width 3", root, a)
    assert verdict.problems == ["--num_it is not a parameter of a function train.py binds with argbind"]
    assert verdict.warnings and "--Net.width" in verdict.warnings[0]
