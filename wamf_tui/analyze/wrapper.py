"""The benchmark wrapper: a small Python file written next to the contract when the
user accepts it. It pins seeds, switches trackers off, points outputs at one folder
and stops the job after N optimizer steps, then runs the job script unchanged."""

from __future__ import annotations

from pathlib import Path

WRAPPER = '''"""Benchmark wrapper written by wamf-tui. Runs the job script unchanged:
python wamf_bench.py SCRIPT [ARGS...]

WAMF_SEED (default 0)     seeds python, numpy and torch (CPU and CUDA) before the job starts
WAMF_MAX_STEPS (optional)  stops cleanly after that many optimizer steps
WAMF_OUT (optional)       one folder for everything the job writes; trackers go there, disabled
WAMF_DETERMINISTIC=1      accuracy mode: torch.use_deterministic_algorithms(True)
"""

import os
import random
import runpy
import sys

if len(sys.argv) < 2:
    sys.exit("usage: python wamf_bench.py SCRIPT [ARGS...]")

for key, value in {
    "WANDB_MODE": "disabled",
    "SWANLAB_MODE": "disabled",
    "COMET_MODE": "disabled",
    "CLEARML_OFFLINE_MODE": "1",
    "HF_HUB_OFFLINE": "1",
}.items():
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
if max_steps:
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def _count(optimizer, args, kwargs):
        global done
        done += 1
        if done >= max_steps:
            raise _StepLimit

    register_optimizer_step_post_hook(_count)

script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
try:
    runpy.run_path(script, run_name="__main__")
except _StepLimit:
    print(f"wamf: stopped after {done} optimizer steps", file=sys.stderr)
'''


def write_wrapper(path: Path) -> str | None:
    """Write the wrapper atomically; returns an error message instead of raising."""
    from ..contract import write_atomic

    try:
        write_atomic(path, WRAPPER)
    except OSError as e:
        return f"could not write {path}: {e.strerror or e}"
    return None
