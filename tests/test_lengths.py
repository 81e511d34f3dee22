"""The settings that bound or scale a run's length, read alike in every config system."""

from __future__ import annotations

import pytest
from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.lengths import length_role
from wamf_tui.read.source import analyze_script


@pytest.mark.parametrize(("name", "role"), [
    ("--max-iters", "bound"), ("trainer.max_epochs", "bound"), ("SOLVER.MAX_ITER", "bound"),
    ("--training.steps", "bound"), ("eval.max_iters", "scale"), ("validator.steps", "scale"),
    ("--warmup-epochs", "scale"), ("lr_decay_iters", "scale"), ("--grad-accum-steps", "scale"),
    ("gradient_accumulation_steps", "scale"), ("accum_iter", "scale"), ("+trainer.max_time", "scale"),
    ("--dry-run", "scale"), ("eval_only", "scale"), ("--train.global_batch_size", "scale"),
    ("--target-param-data-ratio", "scale"), ("--max_new_tokens", "scale"),
    ("--batch-size", "scale"), ("SOLVER.IMS_PER_BATCH", "scale"), ("--grad_acc_steps", "scale"),
    ("--max_train_samples", "scale"), ("--initial_epoch", "scale"), ("--training_epochs", "bound"),
    ("--batch-norm", None), ("eval_accumulation_steps", None), ("--eval_steps", None), ("--lr", None),
    ("save_interval", None),
])
def test_a_setting_is_judged_by_its_name_in_any_spelling(name, role):
    assert length_role(name) == role


ARGPARSE = """\
import argparse, torch
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=90)
p.add_argument("--max-steps", type=int, default=1000)
p.add_argument("--warmup-epochs", type=int, default=5)
p.add_argument("--grad-accum-steps", type=int, default=1)
p.add_argument("--batch-size", type=int, default=64)
p.add_argument("--lr", type=float, default=0.1)
args = p.parse_args()
model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(args.max_steps):
    loss = model(torch.randn(2, 2)).sum()
    loss.backward()
    opt.step()
"""


def test_scaling_flags_are_reported_and_never_taken_for_the_cap(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": ARGPARSE})
    a = analyze_script(root / "train.py", root)
    roles = {c.name: c.role for c in a.step_controls}
    assert roles == {"--epochs": "bound", "--max-steps": "bound", "--warmup-epochs": "scale",
                     "--grad-accum-steps": "scale", "--batch-size": "scale"}
    # warm-up and accumulation are listed first by no rule: the cap is still the step bound
    a.step_controls.sort(key=lambda c: c.role != "scale")
    cut = propose(a, 30, "speed", [])[0]
    assert cut.flags == ["--max-steps=30"]


HF = """\
from dataclasses import dataclass, field
from transformers import HfArgumentParser, Trainer, TrainingArguments

@dataclass
class ScriptArguments:
    dataset_name: str = field(default="imdb")

def main(script_args, training_args):
    trainer = Trainer(model=None, args=training_args)
    trainer.train()
    trainer.save_model(training_args.output_dir)

if __name__ == "__main__":
    types = (ScriptArguments, TrainingArguments)
    parser = HfArgumentParser(types)
    script_args, training_args = parser.parse_args_into_dataclasses()
    main(script_args, training_args)
"""


def test_an_hf_parser_given_its_dataclasses_through_a_name_is_read_and_its_rows_sit_at_train(tmp_path):
    """TRL's `dataclass_types = (...)`, then `TrlParser(dataclass_types)`: the tuple's classes are the parser's.
    The Trainer saves and evaluates inside `trainer.train()`, so that call is where its rows sit."""
    root = make_repo(tmp_path / "job", {"train.py": HF})
    a = analyze_script(root / "train.py", root)
    assert a.config_system == "hf_trainer"
    assert {"--dataset_name", "--gradient_accumulation_steps"} <= set(a.flags)
    roles = {c.name: c.role for c in a.step_controls}
    assert roles["--max_steps"] == "bound" and roles["--gradient_accumulation_steps"] == "scale"
    saves = {c.name: c.line for c in a.checkpoints}
    assert saves["Trainer checkpoints (save_strategy)"] == 10
    assert {e.name: e.line for e in a.evals}["Trainer evaluation (eval_strategy)"] == 10


LOCALS = """\
import torch
def main():
    epochs = 3
    max_iters = len(range(10)) * epochs
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(max_iters):
        model(torch.randn(2, 2)).sum().backward()
        opt.step()
main()
"""


def test_a_functions_constant_is_a_setting_and_its_computed_local_is_not(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": LOCALS})
    a = analyze_script(root / "train.py", root)
    assert [(c.name, c.default) for c in a.step_controls] == [("epochs", "3")]
