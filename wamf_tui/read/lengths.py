"""Which settings govern how long a job runs, by name, for every config system alike.

A setting *bounds* the run (the step, iteration or epoch count the loop stops at: the one a benchmark
caps) or *scales* it (warm-up and decay lengths, gradient accumulation, token budgets, eval batches,
dry-run modes: what an expert reads beside the bound to judge how much one step and one run cost).
One vocabulary, so that argparse, Hydra keys, dataclass fields and yacs keys are judged the same way.
"""

import re
from typing import Literal

Role = Literal["bound", "scale"]

BOUND = re.compile(r"^(max_steps|max_iters|max_iter|num_steps|steps|total_steps|train_steps|iters|max_train_steps|"
                   r"num_train_steps|max_iterations|num_iters|n_iters|total_iters|train_iters|num_iterations|"
                   r"epochs|num_epochs|max_epochs|num_train_epochs|n_epochs|limit_train_batches)$")

SCALE = re.compile(r"^(\w*warmup\w*|(lr_)?decay_(iters|steps|epochs)|cooldown_\w+|(grad|gradient)?_?accum\w*|"
                   r"eval_(iters|batches)|max_eval_(iters|steps|batches)|eval_only|dry_run|fast_dev_run|smoke_test|"
                   r"epoch_repeats|start_epoch|\w+_per_epoch|limit_\w+_batches|max_time|min_(epochs|steps)|"
                   r"max_tokens|num_tokens\w*|tokens_per_\w+|target_flops|target_\w+_ratio|"
                   r"(global|total|micro)_batch_size|num_samples|max_new_tokens)$")

# a section that counts evaluation, not training: `eval.max_iters`, `validator.steps`
_EVAL_SECTION = re.compile(r"(^|_)(eval|evaluation|val|valid|validation|validator|test)(_|$)")


def length_role(name: str) -> Role | None:
    """The role of a setting named as its parser spells it (`--max-iters`, `trainer.max_epochs`,
    `SOLVER.MAX_ITER`, `+trainer.max_time`), or None when it does not govern the run's length."""
    key = name.lstrip("-+~").replace("-", "_").lower()
    *sections, leaf = key.split(".")
    if BOUND.match(leaf):
        return "scale" if any(_EVAL_SECTION.search(s) for s in sections) else "bound"
    return "scale" if SCALE.match(leaf) else None
