"""Which settings govern how long a job runs, by name, for every config system alike.

A setting *bounds* the run (the step, iteration or epoch count the loop stops at: the one a benchmark
caps) or *scales* it (warm-up and decay lengths, gradient accumulation, batch sizes, token and sample
budgets, eval batches, dry-run modes: what an expert reads beside the bound to judge what a step and a
run cost).
One vocabulary, so that argparse, Hydra keys, dataclass fields and yacs keys are judged the same way.
"""

import re
from typing import Literal

from ..model import StepControl

Role = Literal["bound", "scale"]

BOUND = re.compile(r"^(max_steps|max_iters|max_iter|num_steps|steps|total_steps|train_steps|iters|max_train_steps|"
                   r"num_train_steps|max_iterations|num_iters|n_iters|total_iters|train_iters|num_iterations|iterations|"
                   r"max_train_step|epochs|num_epochs|max_epochs|num_train_epochs|n_epochs|max_train_epochs|"
                   r"train_epochs|training_epochs|total_epochs|limit_train_batches|"
                   r"max_duration)$")  # composer's and OLMo's length (steps, or `1ep`, `2e12T`)

SCALE = re.compile(r"^(\w*warmup\w*|(lr_)?decay_(iters|steps|epochs)|cooldown_\w+|(grad|gradient|micro)_?acc\w*|"
                   r"accum\w*|eval_(iters|batches)|max_eval_(iters|steps|batches|step)|eval_only|dry_run|fast_dev_run|"
                   r"smoke_test|epoch_repeats|(start|initial)_(epoch|step|iter)|\w+_per_epoch|limit_\w+_batches|"
                   r"max_time|min_(epochs|steps)|patience|kimg|total_kimg|"
                   r"max_tokens|num_tokens\w*|tokens_per_\w+|target_flops|target_\w+_ratio|"
                   r"(\w+_)?batch_size(_\w+)?|\w*microbatch\w*|batch|batch_gpu|ims_per_batch|"
                   r"stop_at|stop_after|"  # an early stop, off (None) by default
                   r"max_(train_)?samples|max_examples|(train_)?num_samples|num_train_samples|max_new_tokens|"
                   r"(total_)?timesteps|total_env_steps|num_envs|update_epochs|num_minibatches)$")  # RL: env steps

# a section that counts evaluation, not training (`eval.max_iters`, `validator.steps`), or a part of a step
# (`gradient_accumulation.steps`, `warmup.steps`)
_EVAL_SECTION = re.compile(r"(^|_)(eval|evaluation|val|valid|validation|validator|test)(_|$)|accum|warmup")


def length_role(name: str) -> Role | None:
    """The role of a setting named as its parser spells it (`--max-iters`, `trainer.max_epochs`,
    `SOLVER.MAX_ITER`, `+trainer.max_time`), or None when it does not govern the run's length."""
    key = name.lstrip("-+~").replace("-", "_").lower()
    if "profil" in key:  # a profiler's warm-up and steps are its own, not the run's
        return None
    *sections, leaf = key.split(".")
    if BOUND.match(leaf):
        return "scale" if any(_EVAL_SECTION.search(s) for s in sections) else "bound"
    return "scale" if SCALE.match(leaf) else None


def length_control(name: str, default: str | None, file: str, line: int) -> StepControl | None:
    """A config system's setting as a step control, when it governs the run's length: a scale always, a bound
    only with a whole-number default (`max_steps: int = 1000`; a `None` placeholder bounds nothing)."""
    role = length_role(name)
    if role and (role == "scale" or default and default.isdigit()):
        return StepControl(name=name, file=file, line=line, default=default, role=role)
    return None
