"""A save or eval under a condition the job's own code fixes false never runs: it is no row of the
benchmark. Anything a setting or a later assignment can turn on stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from wamf_tui.read.analyze import analyze_script

LOOP = """\
for step in range(100):
    loss = model(x)
    loss.backward()
    opt.step()
    if {cond}:
        torch.save(model, "ckpt.pt")
"""

DATACLASS = """\
import torch
from dataclasses import dataclass

@dataclass
class Hyperparameters:
    steps: int = 100
    save_checkpoint: bool = False

args = Hyperparameters({call})
"""


def saves(tmp_path: Path, text: str) -> list[int]:
    (tmp_path / "train.py").write_text(text)
    return [f.line for f in analyze_script(tmp_path / "train.py", tmp_path).checkpoints if not f.dead]


@pytest.mark.parametrize(("head", "cond", "kept"), [
    (DATACLASS.format(call=""), "master and args.save_checkpoint", False),
    (DATACLASS.format(call="save_checkpoint=True"), "args.save_checkpoint", True),  # built with arguments
    (DATACLASS.format(call="") + "args.save_checkpoint = True\n", "args.save_checkpoint", True),  # set again
    ("import torch\nSAVE = False\n", "SAVE", False),
    ("import torch\nSAVE = None\n", "step > 10 and SAVE", False),
    ("import torch\nSAVE = True\n", "SAVE", True),
    ("import torch\nSAVE = False\ndef flip():\n    global SAVE\n    SAVE = True\n", "SAVE", True),
    ("import torch\nSAVE = False\nexec(open('configurator.py').read())\n", "SAVE", True),  # a setting there
    ("import torch\nSAVE = False\n", "SAVE or step == 99", True),  # not every way in is closed
])
def test_a_condition_the_code_fixes_false_leaves_the_save_out(tmp_path, head, cond, kept):
    text = head + LOOP.format(cond=cond)
    assert saves(tmp_path, text) == ([text.count("\n", 0, text.index("torch.save(model")) + 1] if kept else [])


INTERVAL = """\
import torch as th
import lightning as L
save_interval = 100
eval_interval = 20
fabric = L.Fabric()
step_count = 0
for batch in data:
    loss = model(batch)
    fabric.backward(loss)
    opt.step()
    step_count += 1
    if step_count % eval_interval == 0:
        validate(model)
    if step_count % save_interval == 0:
        fabric.save("ckpt.pth", model)
        th.save(model, "copy.pt")
"""


@pytest.mark.parametrize(("steps", "rows"), [
    (30, ["fabric.save off (train.py:15): the code saves every 100 steps, past the benchmark's 30",
          "torch.save off (train.py:16): the code saves every 100 steps, past the benchmark's 30",
          "eval validate (train.py:13) runs at step 20: the code sets its interval"]),
    (10, ["fabric.save off (train.py:15): the code saves every 100 steps, past the benchmark's 10",
          "torch.save off (train.py:16): the code saves every 100 steps, past the benchmark's 10",
          "eval validate (train.py:13) out of the timed steps"]),
])
def test_an_interval_the_code_fixes_is_read_against_the_benchmarks_steps(tmp_path, steps, rows):
    """`import torch as th` makes `th.save` a save; Fabric's own save is one too."""
    from wamf_tui.propose.benchmark import propose

    (tmp_path / "train.py").write_text(INTERVAL)
    a = analyze_script(tmp_path / "train.py", tmp_path)
    got = [c for c in propose(a, steps) if "save" in c.what or "eval" in c.what]
    assert [c.what for c in got] == rows
    assert got[-1].how == ("no switch: the code runs it every 20 steps" if steps == 30 else
                           "10 steps, below its interval (20)")


def test_an_interval_counted_after_its_test_still_fires_at_step_0(tmp_path):
    from wamf_tui.propose.benchmark import propose

    late = INTERVAL.replace("    step_count += 1\n", "") + "    step_count += 1\n"
    (tmp_path / "train.py").write_text(late)
    rows = [c.what for c in propose(analyze_script(tmp_path / "train.py", tmp_path), 30) if "save" in c.what]
    at_0 = "still runs once, at step 0 (step_count % save_interval == 0 is true at 0)"
    assert rows == [f"fabric.save (train.py:14) {at_0}", f"torch.save (train.py:15) {at_0}"]


LEFT_OUT = """\
import argparse
import torch
p = argparse.ArgumentParser()
p.add_argument("--save_dir")
p.add_argument("--val_prompts", nargs="+", default=None)
p.add_argument("--every", type=int, default=100)
args = p.parse_args()
for step in range(1000):
    loss = model(x)
    loss.backward()
    opt.step()
    if {save} and step % args.every == 0:
        torch.save(model, "ckpt.pt")
    if args.val_prompts is not None and step % args.every == 0:
        evaluate(model)
"""


@pytest.mark.parametrize(("save", "command", "rows"), [
    ("args.save_dir", [], ["torch.save off (train.py:13)", "eval evaluate (train.py:15) out of the timed steps"]),
    ("args.save_dir", ["--save_dir", "/ckpt", "--val_prompts=a cat"], [  # given: the run line drops them
        "torch.save off (train.py:13)", "eval evaluate (train.py:15) out of the timed steps"]),
    ("not args.save_dir", [], [  # runs when the flag is left out: never said to be off
        "torch.save (train.py:13) still runs once, at step 0 (not args.save_dir and step % args.every == 0 is true "
        "at 0)", "eval evaluate (train.py:15) out of the timed steps"]),
])
def test_a_condition_on_a_flag_left_out_keeps_it_off(tmp_path, save, command, rows):
    """`if args.save_dir and ...` with `--save_dir` defaulting to None never runs while the command leaves the
    flag out (diffusers' `--validation_prompts`), and the benchmark's run line drops it where the command gives it."""
    from wamf_tui.propose.benchmark import propose

    (tmp_path / "train.py").write_text(LEFT_OUT.format(save=save))
    a = analyze_script(tmp_path / "train.py", tmp_path, command)
    got = [c for c in propose(a, 30, "speed", command) if "save" in c.what or "eval" in c.what]
    assert [c.what for c in got] == rows
    if not command and save == "args.save_dir":
        assert [c.how for c in got] == ["--save_dir left out (default None)", "--val_prompts left out (default None)"]
    if command:
        assert [c.drop for c in got] == [["--save_dir"], ["--val_prompts"]]
