"""Branches the job's resolved values rule out (wamf_tui/read/branches.py), and what the benchmark makes of
them: a save no value reaches is not switched, a tracker a given switch turns on loses that switch, and an
output folder the job cannot run without gets the benchmark's folder."""

from __future__ import annotations

import ast

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.branches import dead_lines
from wamf_tui.read.values import defaults

JOB = """\
import argparse
import os
import torch
from accelerate import Accelerator

p = argparse.ArgumentParser()
p.add_argument("--checkpointing_steps", type=str, default=None)
p.add_argument("--output_dir", type=str, default=None)
p.add_argument("--with_tracking", action="store_true")
p.add_argument("--max_train_steps", type=int, default=None)

def main():
    args = p.parse_args()
    accelerator = (
        Accelerator(log_with="wandb")
        if args.with_tracking
        else Accelerator()
    )
    steps = args.checkpointing_steps
    if steps is not None and steps.isdigit():
        steps = int(steps)
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    best = None
    for epoch in range(3):
        for i, batch in enumerate(range(10)):
            loss = model(torch.randn(1, 2)).sum()
            accelerator.backward(loss)
            opt.step()
            if isinstance(steps, int):
                if i % steps == 0:
                    accelerator.save_state(f"step_{i}")
        if best is None or best > 1:
            best = 1
            accelerator.save_state(os.path.join(args.output_dir, "best"))

if __name__ == "__main__":
    main()
"""


def _line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_branch_a_local_copy_of_a_setting_rules_out_is_dead():
    tree = ast.parse(JOB)
    dead = dead_lines(tree, defaults({"--checkpointing_steps": "None", "--with_tracking": "False"}))
    assert _line(JOB, 'save_state(f"step_') in dead
    assert _line(JOB, 'Accelerator(log_with="wandb")') in dead
    assert _line(JOB, "else Accelerator()") not in dead
    assert _line(JOB, 'os.path.join(args.output_dir, "best")') not in dead  # `best` changes in the loop


def test_a_value_the_command_gives_keeps_the_branch_alive():
    tree = ast.parse(JOB)
    dead = dead_lines(tree, defaults({"--checkpointing_steps": "'100'", "--with_tracking": "True"}))
    assert _line(JOB, 'save_state(f"step_') not in dead  # `steps` may be an int now: not provably dead
    assert _line(JOB, 'Accelerator(log_with="wandb")') not in dead
    assert _line(JOB, "else Accelerator()") in dead


def test_names_exec_may_rewrite_are_never_followed():
    text = "wandb_log = False\nexec(open('configurator.py').read())\nif wandb_log:\n    import wandb\n"
    assert dead_lines(ast.parse(text), defaults({})) == {}
    assert 4 in dead_lines(ast.parse(text.replace("exec(open('configurator.py').read())", "pass")), defaults({}))


def test_the_job_model_drops_the_unreached_save_and_routes_the_needed_output(tmp_path):
    (tmp_path / "train.py").write_text(JOB)
    a = analyze_script(tmp_path / "train.py", tmp_path)
    assert [(c.name, c.line) for c in a.checkpoints if not c.dead] == [("save_state", _line(JOB, '"best"'))]
    assert all("is false with the job's values" in c.dead for c in a.checkpoints if c.line != _line(JOB, '"best"'))
    assert [(r.name, r.kind) for r in a.required] == [("--output_dir", "output")]
    assert [t.unset for t in a.trackers] == ["--with_tracking"]  # left out of the command: said off by it
    rows = propose(a, 30)
    out = next(c for c in rows if c.what == "all outputs into one folder")
    assert out.flags == ["--output_dir=$WAMF_OUT"]
    assert not any("--checkpointing_steps" in " ".join(c.flags) for c in rows)


def test_a_tracker_switch_the_command_gives_is_dropped(tmp_path):
    (tmp_path / "train.py").write_text(JOB)
    args = ["--with_tracking", "--max_train_steps", "100"]
    a = analyze_script(tmp_path / "train.py", tmp_path, args)
    [tracker] = a.trackers
    assert (tracker.name, tracker.unset, tracker.line) == ("wandb", "--with_tracking", _line(JOB, "log_with"))
    rows = propose(a, 30, args=args)
    assert any("--with_tracking" in c.drop for c in rows)


def test_an_output_folder_tested_before_use_is_not_needed(tmp_path):
    text = JOB.replace('            accelerator.save_state(os.path.join(args.output_dir, "best"))',
                       '            if args.output_dir is not None:\n'
                       '                accelerator.save_state(os.path.join(args.output_dir, "best"))')
    (tmp_path / "train.py").write_text(text)
    assert analyze_script(tmp_path / "train.py", tmp_path).required == []


BY_HAND = """\
import argparse
import torch

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=40)
p.add_argument("--use-optimizer", action="store_true")
p.add_argument("--lr", type=float, default=20)
args = p.parse_args()
model = torch.nn.Linear(2, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
for epoch in range(args.epochs):
    for x in range(100):
        loss = model(torch.randn(1, 2)).sum()
        loss.backward()
        if args.use_optimizer:
            optimizer.step()
        else:
            for q in model.parameters():
                q.data.add_(q.grad, alpha=-args.lr)
"""


def test_an_optimizer_step_the_values_skip_gives_way_to_the_update_by_hand(tmp_path):
    """word_language_model: `optimizer.step()` only with `--use-optimizer`; by default the weights are
    updated by hand, so the wrapper's step counter would never fire: one epoch, by the job's own flag."""
    (tmp_path / "train.py").write_text(BY_HAND)
    a = analyze_script(tmp_path / "train.py", tmp_path, ["--epochs", "6"])
    roles = {x.role: x.line for x in a.anchors}
    assert "optimizer_step" not in roles and roles["manual_update"] == _line(BY_HAND, "q.data.add_")
    cap = propose(a, 30, args=["--epochs", "6"])[0]
    assert (cap.flags, cap.env) == (["--epochs=1"], [])
    given = analyze_script(tmp_path / "train.py", tmp_path, ["--use-optimizer"])
    assert {x.role: x.line for x in given.anchors}["optimizer_step"] == _line(BY_HAND, "optimizer.step()")


def test_a_module_beside_the_script_is_the_one_its_import_names(tmp_path):
    """`python dir/main.py` puts `dir` first on sys.path: `from trainer import Trainer` is `dir/trainer.py`, even
    when the repo root has a `trainer.py` of its own (minGPT-ddp's Hydra entry holds no loop)."""
    (tmp_path / "app").mkdir()
    (tmp_path / "trainer.py").write_text("class Trainer:\n    pass\n")
    (tmp_path / "app" / "trainer.py").write_text(
        "class Trainer:\n    def train(self):\n        for x in self.data:\n            loss = self.model(x)\n"
        "            loss.backward()\n            self.optimizer.step()\n")
    (tmp_path / "app" / "main.py").write_text("from trainer import Trainer\n\nif __name__ == '__main__':\n"
                                              "    Trainer().train()\n")
    a = analyze_script(tmp_path / "app" / "main.py", tmp_path)
    assert {(x.role, x.file, x.line) for x in a.anchors if x.role in ("loss", "backward", "optimizer_step")} == {
        ("loss", "app/trainer.py", 4), ("backward", "app/trainer.py", 5), ("optimizer_step", "app/trainer.py", 6)}


def test_an_input_remade_in_a_branch_the_values_skip_is_not_the_batch(tmp_path):
    """diffusers: `if args.dream_training: noisy, target = dream(...)` (off by default) before the forward:
    the batch row is where the input is made on the path the job takes."""
    text = ("import argparse\nimport torch\np = argparse.ArgumentParser()\n"
            "p.add_argument('--dream_training', action='store_true')\nargs = p.parse_args()\n"
            "while True:\n    noisy = add_noise(next(it))\n    if args.dream_training:\n"
            "        noisy = dream(noisy)\n    pred = model(noisy)\n"
            "    loss = torch.nn.functional.mse_loss(pred, target)\n"
            "    loss.backward()\n    opt.step()\n")
    (tmp_path / "train.py").write_text(text)
    a = analyze_script(tmp_path / "train.py", tmp_path)
    assert {x.role: x.line for x in a.anchors}["batch"] == _line(text, "noisy = add_noise")
    given = analyze_script(tmp_path / "train.py", tmp_path, ["--dream_training"])
    assert {x.role: x.line for x in given.anchors}["batch"] == _line(text, "noisy = dream")


MATCH = """\
import argparse
p = argparse.ArgumentParser()
p.add_argument("--loss_fn", default="fvu")
args = p.parse_args()
match args.loss_fn:
    case "ce":
        ce_loss.backward()
    case "fvu":
        fvu_loss.backward()
    case other:
        raise ValueError(other)
match args.mode:
    case "a":
        a_step()
"""


def test_a_match_on_a_setting_runs_only_the_case_its_value_takes():
    tree = ast.parse(MATCH)
    dead = dead_lines(tree, defaults({"--loss_fn": "'fvu'"}))
    assert _line(MATCH, "ce_loss.backward()") in dead and _line(MATCH, "raise ValueError") in dead
    assert _line(MATCH, "fvu_loss.backward()") not in dead
    assert _line(MATCH, "a_step()") not in dead  # `args.mode` is no setting read here: not judged
    dead = dead_lines(tree, defaults({"--loss_fn": "'ce'"}))
    assert _line(MATCH, "fvu_loss.backward()") in dead and _line(MATCH, "ce_loss.backward()") not in dead


TRAINER = """\
import torch


class Trainer:
    def __init__(self, cfg, model):
        self.cfg, self.model = cfg, model
        self.opt = torch.optim.Adam(model.parameters())

    def fit(self, loader):
        for x in loader:
            match self.cfg.loss_fn:
                case "ce":
                    ce = self.model(x).loss
                    ce.backward()
                case "fvu":  # the loss a forward hook left (no model call of its own here)
                    fvu = self.hooked_loss
                    fvu.backward()
            self.opt.step()
"""
ENTRY = """\
import argparse

from trainer import Trainer

p = argparse.ArgumentParser()
p.add_argument("--loss_fn", default="fvu")
cfg = p.parse_args()
Trainer(cfg, model).fit(loader)
"""


def test_the_step_in_an_imported_module_is_the_one_the_jobs_values_take(tmp_path):
    """sparsify: the trainer's `match self.cfg.loss_fn:` backpropagates another loss in each case; the
    default `fvu` takes the second."""
    (tmp_path / "train.py").write_text(ENTRY)
    (tmp_path / "trainer.py").write_text(TRAINER)
    anchors = analyze_script(tmp_path / "train.py", tmp_path).anchors
    got = {a.role: f"{a.file}:{a.line}" for a in anchors}
    assert got["backward"] == f"trainer.py:{_line(TRAINER, 'fvu.backward()')}"
    assert got["loss"] == f"trainer.py:{_line(TRAINER, 'fvu = self.hooked_loss')}"
    assert not any(a.line in (_line(TRAINER, "ce = self.model"), _line(TRAINER, "ce.backward()")) for a in anchors)
    (tmp_path / "train.py").write_text(ENTRY.replace('default="fvu"', 'default="ce"'))
    got = {a.role: f"{a.file}:{a.line}" for a in analyze_script(tmp_path / "train.py", tmp_path).anchors}
    assert got["backward"] == f"trainer.py:{_line(TRAINER, 'ce.backward()')}"
