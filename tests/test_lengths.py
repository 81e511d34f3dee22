"""The settings that bound or scale a run's length, read alike in every config system."""

from __future__ import annotations

import pytest
from conftest import make_repo

from wamf_tui.propose.benchmark import propose
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.lengths import length_role


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
    ("save_interval", None), ("--profiler.profiler_warmup", None),
    ("--total-timesteps", "scale"), ("--num-envs", "scale"), ("--update-epochs", "scale"),
    ("--accelerator.gradient_accumulation.steps", "scale"), ("--steps", "bound"), ("--iterations", "bound"),
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


TYRO = {
    "train.py": "import tyro\nfrom titan.config import JobConfig\n\n"
                "def main(cfg: JobConfig):\n    num_steps = 0\n    while num_steps < cfg.training.steps:\n"
                "        loss = model(batch)\n        loss.backward()\n        opt.step()\n        num_steps += 1\n\n"
                "if __name__ == '__main__':\n    main(tyro.cli(JobConfig))\n",
    "titan/__init__.py": "",
    "titan/config.py": "from dataclasses import dataclass, field\n\n"
                       "@dataclass\nclass Training:\n    steps: int = 1000\n    warmup_steps: int = 200\n"
                       "    global_batch_size: int = -1\n    lr: float = 3e-4\n\n"
                       "@dataclass\nclass Validator:\n    steps: int = -1\n\n"
                       "@dataclass\nclass Profiler:\n    profiler_warmup: int = 3\n\n"
                       "@dataclass\nclass JobConfig:\n    training: Training = field(default_factory=Training)\n"
                       "    validator: Validator = field(default_factory=Validator)\n"
                       "    profiler: Profiler = field(default_factory=Profiler)\n",
}


def test_a_tyro_jobs_sections_give_their_length_settings_and_a_counter_is_none(tmp_path):
    """`--training.warmup_steps` scales the run, `--validator.steps` counts eval batches; `num_steps = 0` then
    `num_steps += 1` is the loop's counter, and a profiler's warm-up is the profiler's."""
    root = make_repo(tmp_path / "job", TYRO)
    a = analyze_script(root / "train.py", root)
    assert a.config_system == "tyro"
    assert {c.name: (c.role, c.file, c.line) for c in a.step_controls} == {
        "--training.steps": ("bound", "train.py", 6),
        "--training.warmup_steps": ("scale", "titan/config.py", 6),
        "--training.global_batch_size": ("scale", "titan/config.py", 7),
        "--validator.steps": ("scale", "titan/config.py", 12)}
