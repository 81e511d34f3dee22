"""The DeepSpeed JSON config a job runs with, read as data (json.loads): its monitors are trackers, and
the settings that slow every step are said and timed. Only a file the command names, or one a YAML file
the command names points to, inside the repo."""

from __future__ import annotations

import json

import pytest
from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.propose.validate import check_run
from wamf_tui.read.analyze import analyze_script

TRAIN = """\
import argparse, deepspeed
p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=1000)
p = deepspeed.add_config_arguments(p)
args = p.parse_args()
engine, opt, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
for step in range(args.steps):
    loss = engine(x)
    engine.backward(loss)
    engine.step()
"""

ON = {"train_micro_batch_size_per_gpu": 4, "zero_optimization": {"stage": 2}, "wall_clock_breakdown": True,
      "flops_profiler": {"enabled": False}, "tensorboard": {"enabled": True, "output_path": "tb/"},
      "wandb": {"enabled": True, "project": "x"}, "comms_logger": {"enabled": "auto"}}


def rows(tmp_path, files: dict[str, str], command: list[str]) -> list[tuple[str, list[str]]]:
    root = make_repo(tmp_path / "job", {"train.py": TRAIN, **files})
    a = analyze_script(root / "train.py", root, command)
    return [(c.what, c.env) for c in propose(a, 30, args=command) if "tracker" in c.what or "DeepSpeed" in c.what]


EXPECTED = [
    ("tensorboard tracker (configs/ds.json:10) has no switch: it logs in every run", []),
    ("wandb tracker off (configs/ds.json:14)", ["WANDB_MODE=disabled"]),
    ("DeepSpeed wall_clock_breakdown on (configs/ds.json:6): it times each step's forward, backward and optimizer "
     "step with a device sync between them", []),
]


def test_the_monitors_and_step_timers_of_the_config_the_command_names_are_rows(tmp_path):
    got = rows(tmp_path, {"configs/ds.json": json.dumps(ON, indent=2)}, ["--deepspeed_config", "configs/ds.json"])
    assert got == EXPECTED


def test_a_yaml_file_the_command_names_points_to_the_deepspeed_config(tmp_path):
    """axolotl's `deepspeed: deepspeed_configs/zero1.json`, accelerate's `deepspeed_config_file:`."""
    files = {"configs/ds.json": json.dumps(ON, indent=2),
             "configs/run.yml": "model: x\ndeepspeed_config:\n  deepspeed_config_file: configs/ds.json\n"}
    assert rows(tmp_path, files, ["configs/run.yml"]) == EXPECTED


@pytest.mark.parametrize(("files", "command"), [
    ({"configs/ds.json": json.dumps({"zero_optimization": {"stage": 3}, "wall_clock_breakdown": False,
                                     "tensorboard": {"enabled": "auto"}})}, ["--deepspeed", "configs/ds.json"]),
    ({"configs/ds.json": json.dumps({"wall_clock_breakdown": True, "labels": [1]})},  # not a DeepSpeed config
     ["--deepspeed", "configs/ds.json"]),
    ({"configs/ds.json": "{ not json"}, ["--deepspeed", "configs/ds.json"]),
    ({"configs/ds.json": json.dumps(ON)}, []),  # the command does not name it
])
def test_nothing_is_said_of_a_config_that_turns_nothing_on_or_is_not_the_jobs(tmp_path, files, command):
    assert rows(tmp_path, files, command) == []


def test_a_config_outside_the_repo_is_never_read_and_a_changed_one_is_read_again(tmp_path):
    (tmp_path / "outside.json").write_text(json.dumps(ON))
    assert rows(tmp_path, {}, ["--deepspeed", "../outside.json"]) == []
    root = tmp_path / "job"
    a = analyze_script(root / "train.py", root, ["--deepspeed", "ds.json"])
    assert "ds.json" not in a.digests
    (root / "ds.json").write_text(json.dumps(ON))
    a = analyze_script(root / "train.py", root, ["--deepspeed", "ds.json"])
    assert "ds.json" in a.digests and [o.name for o in a.overheads] == ["DeepSpeed wall_clock_breakdown"]


def test_the_options_deepspeed_adds_to_the_jobs_parser_pass_check(tmp_path):
    """`deepspeed.add_config_arguments(parser)` adds `--deepspeed` and `--deepspeed_config`: a run line that
    gives them is the job's own, not an unknown option."""
    root = make_repo(tmp_path / "job", {"train.py": TRAIN, "ds.json": json.dumps(ON)})
    a = analyze_script(root / "train.py", root, ["--deepspeed", "--deepspeed_config", "ds.json"])
    assert check_run("deepspeed train.py --deepspeed --deepspeed_config ds.json --steps=30", root, a).problems == []
    bare = make_repo(tmp_path / "bare", {"train.py": TRAIN.replace("p = deepspeed.add_config_arguments(p)\n", "")})
    a = analyze_script(bare / "train.py", bare, [])
    assert check_run("deepspeed train.py --deepspeed_config ds.json", bare, a).problems == [
        "--deepspeed_config is not an option of train.py"]
