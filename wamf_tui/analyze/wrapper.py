"""The benchmark wrapper: a small Python file written next to the contract when the
user accepts it. It pins seeds, switches trackers off, points outputs at one folder
and stops the job after N optimizer steps, then runs the job script unchanged."""

from __future__ import annotations

from pathlib import Path

WRAPPER = '''"""Benchmark wrapper written by wamf-tui. Runs the job script unchanged:
python wamf_bench.py SCRIPT [ARGS...]
python wamf_bench.py -m MODULE [ARGS...]
python wamf_bench.py --entry MODULE:FUNCTION NAME [ARGS...]   (a console script called NAME)

WAMF_SEED (default 0)     seeds python, numpy and torch (CPU and CUDA) before the job starts
WAMF_MAX_STEPS (optional)  stops cleanly after that many outermost optimizer steps
WAMF_OUT (optional)       one folder for everything the job writes; trackers go there, disabled
WAMF_DETERMINISTIC=1      accuracy mode: torch.use_deterministic_algorithms(True)
"""

import os
import random
import runpy
import sys

if len(sys.argv) < 2 or sys.argv[1] in ("-m", "--entry") and len(sys.argv) < 3:
    sys.exit("usage: python wamf_bench.py SCRIPT|-m MODULE|--entry MODULE:FUNCTION NAME [ARGS...]")

for key, value in {
    "WANDB_MODE": "disabled",
    "SWANLAB_MODE": "disabled",
    "COMET_MODE": "disabled",
    "CLEARML_OFFLINE_MODE": "1",
}.items():  # not HF_HUB_OFFLINE: it would block the model and data downloads the job needs
    os.environ.setdefault(key, value)
out = os.environ.get("WAMF_OUT")
if out:
    os.makedirs(out, exist_ok=True)
    os.environ.setdefault("WANDB_DIR", out)
    os.environ.setdefault("MLFLOW_TRACKING_URI", "file:" + os.path.join(os.path.abspath(out), "mlruns"))

seed = int(os.environ.get("WAMF_SEED", "0"))
random.seed(seed)
try:
    import numpy

    numpy.random.seed(seed)
except ImportError:
    pass
import torch

torch.manual_seed(seed)  # seeds every CUDA device too
if os.environ.get("WAMF_DETERMINISTIC") == "1":
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)


class _StepLimit(BaseException):
    """Not an Exception: the job's own `except Exception` must not swallow the stop."""


max_steps = int(os.environ.get("WAMF_MAX_STEPS", "0"))
done = 0
depth = 0  # optimizers stepping inside another's step (a container of optimizers): one step, not several
if max_steps:
    from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook

    def _enter(optimizer, args, kwargs):
        global depth
        depth += 1

    def _count(optimizer, args, kwargs):
        global done, depth
        depth -= 1
        if depth:
            return
        done += 1
        if done >= max_steps:
            raise _StepLimit

    register_optimizer_step_pre_hook(_enter)
    register_optimizer_step_post_hook(_count)

try:
    if sys.argv[1] == "-m":  # as `python -m MODULE`: the current folder first on the path
        module = sys.argv[2]
        sys.argv = [module, *sys.argv[3:]]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    elif sys.argv[1] == "--entry":  # as the console script NAME would: import MODULE, call FUNCTION
        import importlib

        module, _, function = sys.argv[2].partition(":")
        sys.argv = sys.argv[3:] or [module]
        target = importlib.import_module(module)
        for part in function.split("."):
            target = getattr(target, part)
        result = target()
        if isinstance(result, int):
            sys.exit(result)
    else:
        script = sys.argv[1]
        sys.argv = sys.argv[1:]
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
        runpy.run_path(script, run_name="__main__")
except _StepLimit:
    print(f"wamf: stopped after {done} optimizer steps", file=sys.stderr)
'''


def write_wrapper(path: Path) -> str | None:
    """Write the wrapper atomically; returns an error message instead of raising."""
    from ..contract import write_atomic

    try:
        if path.exists() and path.read_bytes() != WRAPPER.encode("utf-8"):  # `wrapper_path` picks a free name
            return f"{path} exists and is not the wrapper; left as it is"
        write_atomic(path, WRAPPER)
    except OSError as e:
        return f"could not write {path}: {e.strerror or e}"
    return None
