"""The calls the reader knows by name: trackers, saves, uploads, seeds, evals, and the parser calls it reads.
A call is looked up by its last name part first (`acts_on`): most calls of a module are none of these."""

from __future__ import annotations

import re
from functools import lru_cache

from .options import ABSL_DEFINES, FILE_PARSES, HF_PARSERS, REQUIRED_FLAGS, SIGNATURE_CLIS

# Where a checkpoint goes when a library runs the loop: the hook that sees each step's numbers.
HF_HOOK = "TrainerCallback.on_log (logging_steps=1: loss and grad_norm every step)"
PL_HOOK = "on_before_optimizer_step hook (grad norm before each step)"

TRACKERS = {  # call suffix -> (name, environment switch)
    "wandb.init": ("wandb", "WANDB_MODE=disabled"),
    "SummaryWriter": ("tensorboard", None),
    "mlflow.start_run": ("mlflow", "MLFLOW_TRACKING_URI=file:$WAMF_OUT/mlruns"),
    "mlflow.autolog": ("mlflow", "MLFLOW_TRACKING_URI=file:$WAMF_OUT/mlruns"),
    "Experiment": ("comet", "COMET_MODE=disabled"),
    "aim.Run": ("aim", None),
    "swanlab.init": ("swanlab", "SWANLAB_MODE=disabled"),
    "Task.init": ("clearml", "CLEARML_OFFLINE_MODE=1"),
    # Lightning's loggers (Trainer and Fabric), each starting its service's run
    "WandbLogger": ("wandb", "WANDB_MODE=disabled"),
    "TensorBoardLogger": ("tensorboard", None),
    "CometLogger": ("comet", "COMET_MODE=disabled"),
    "MLFlowLogger": ("mlflow", "MLFLOW_TRACKING_URI=file:$WAMF_OUT/mlruns"),
}
CHECKPOINTS = ("torch.save", "torch.onnx.export", "fabric.save", "accelerator.save", "save_pretrained", "save_model",
               "save_state", "ModelCheckpoint", "save_checkpoint")
UPLOADS = ("push_to_hub", "upload_file", "upload_folder", "upload_fileobj", "create_repo")
SEEDS = ("manual_seed", "random.seed", "np.random.seed", "numpy.random.seed", "set_seed", "set_random_seed",
         "seed_everything", "manual_seed_all")
EVAL_CALLS = re.compile(r"(^|_)(eval|evaluate|validate|validation|estimate_loss|val_step|test)(_|$)", re.I)
# what a check of the job's set-up validates, a split or a transform makes, or a getter builds
# (`validate_args`, `_validate_scalar`, `train_test_split`, `transforms_imagenet_eval`, `get_eval_model`): no pass
# of the model over data
NOT_EVAL = re.compile(r"(^|_)(split|args|arguments|config|cfg|tokenizer|inputs?|tool|calls|paths?|files?|dtype|"
                      r"shapes?|env|version|schema|scalar|range|values?|transforms?)(_|$)|^_?(get|build|create|make)_",
                      re.I)
SAVE_HOOKS = frozenset({"register_save_state_pre_hook"})  # accelerate runs the function inside save_state()
CALLS = frozenset(
    {k.split(".")[-1] for k in (*TRACKERS, *CHECKPOINTS, *UPLOADS, *SEEDS)} | {
        "ArgumentParser", *HF_PARSERS, *SIGNATURE_CLIS, "LightningCLI", "Typer", "exec", "add_argument",
        "parse_args_into_dataclasses", *FILE_PARSES,
        "add", "add_arg",  # configargparse's names for add_argument
        "add_callback",  # a Trainer callback that evaluates (`trainer.add_callback(MMLUEvalCallback)`)
        "TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig", "Trainer", "SFTTrainer", "Seq2SeqTrainer",
        "backward", "step", "optimize", "clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_grad_norm_fp32",
        "generate", "autocast", "GradScaler", "to", "DistributedDataParallel", "DDP", "FullyShardedDataParallel",
        "FSDP", "fully_shard", "initialize", "prepare", "DataLoader", "makedirs", "mkdir", "fit", "train",
        "log", "add_scalar", "log_dict", "log_metrics", "parse_known_args", "option", "argument",
        *REQUIRED_FLAGS, "Accelerator", "init_trackers", "add_config_arguments", "ArgumentGroupFactory", "_add_action",
        *ABSL_DEFINES,
    })
# The tables by the call's last name part: a call can only match an entry that ends like it.
TRACKERS_BY_LAST: dict[str, list[str]] = {}
for _suffix in TRACKERS:
    TRACKERS_BY_LAST.setdefault(_suffix.split(".")[-1], []).append(_suffix)
CHECKPOINTS_BY_LAST = {c.split(".")[-1] for c in CHECKPOINTS}
SAVER = re.compile(r"(saver|checkpoint(er)?|ckpt)$", re.I)  # an object that saves checkpoints
SEEDS_BY_LAST = {s.split(".")[-1] for s in SEEDS}
CONSTANT_FLAGS = ("wandb_log", "seed", "eval_interval", "eval_iters", "always_save_checkpoint")  # configurator


@lru_cache(maxsize=4096)
def acts_on(last: str) -> bool:
    """Whether visit_Call reads a call whose last name part is `last`; names repeat, so it is cached."""
    return last in CALLS or last.endswith(("compile", "Trainer")) or EVAL_CALLS.search(last) is not None \
        or "clip_grad" in last or last.startswith(("save_", "generate"))


HYDRA_APP = {"main", "compose", "initialize", "initialize_config_dir", "initialize_config_module"}
