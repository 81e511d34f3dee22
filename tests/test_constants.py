"""A save or eval under a condition the job's own code fixes false never runs: it is no row of the
benchmark. Anything a setting or a later assignment can turn on stays."""

from __future__ import annotations

from pathlib import Path

import pytest

from wamf_tui.analyze import analyze_script

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
    return [f.line for f in analyze_script(tmp_path / "train.py", tmp_path).checkpoints]


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
