"""The benchmark wrapper: a small Python file written next to the contract when the
user accepts it. It pins seeds, switches trackers off, points outputs at one folder
and stops the job after N optimizer steps, then runs the job script unchanged."""

from __future__ import annotations

import os
from pathlib import Path

WRAPPER = '''"""Benchmark wrapper written by wamf-tui. Runs the job script unchanged:
python wamf_bench.py SCRIPT [ARGS...]
python wamf_bench.py -m MODULE [ARGS...]
python wamf_bench.py --entry MODULE:FUNCTION NAME [ARGS...]   (a console script called NAME)

WAMF_SEED (default 0)     seeds python, numpy and torch (CPU and CUDA) before the job starts
WAMF_MAX_STEPS (optional)  stops cleanly after that many outermost optimizer steps, in this process and in
                          any Python process it starts (a CLI that launches the training anew)
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


CHILD_CAP = """
import os, sys

def _hooks(optimizer):
    left, depth = [int(os.environ.get("WAMF_MAX_STEPS", "0"))], [0]

    def pre(_o, _a, _k):
        depth[0] += 1

    def post(_o, _a, _k):
        depth[0] -= 1
        if depth[0] == 0 and left[0] > 0:
            left[0] -= 1
            if left[0] == 0:
                print("wamf: stopped after " + os.environ["WAMF_MAX_STEPS"] + " optimizer steps", file=sys.stderr)
                sys.stderr.flush()
                raise SystemExit(0)

    optimizer.register_optimizer_step_pre_hook(pre)
    optimizer.register_optimizer_step_post_hook(post)

class _Watch:  # torch is never imported here: only when the child imports its optimizers
    def find_spec(self, name, path, target=None):
        if name != "torch.optim.optimizer":
            return None
        sys.meta_path.remove(self)
        import importlib.util
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _hooks(module)

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, _Watch())
_here = os.path.dirname(os.path.abspath(__file__))
try:  # the environment's own sitecustomize, which this one shadows, still runs
    import importlib.machinery, importlib.util
    _spec = importlib.machinery.PathFinder.find_spec(
        "sitecustomize", [p for p in sys.path if os.path.abspath(p or os.curdir) != _here])
    if _spec is not None and _spec.loader is not None:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
except Exception:
    pass
"""


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
    # a CLI that starts the training in a new Python process (`accelerate launch -m ...`): the cap goes with
    # it, as a sitecustomize on the path the children inherit, which counts their steps the same way
    import atexit
    import shutil
    import tempfile

    _cap = tempfile.mkdtemp(prefix="wamf-cap-")
    atexit.register(shutil.rmtree, _cap, True)
    with open(os.path.join(_cap, "sitecustomize.py"), "w") as f:
        f.write(CHILD_CAP)
    os.environ["PYTHONPATH"] = _cap + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")

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
    from ..infra.files import write_atomic
    from .run_line import is_our_wrapper

    try:
        if path.is_symlink() or path.exists():
            # `wrapper_path` picks a free name; a file of the user's there now is never replaced
            return None if is_our_wrapper(path) else f"{path} exists and is not the wrapper; left as it is"
        tmp = path.with_name(f".{path.name}.{os.getpid()}.new")
        write_atomic(tmp, WRAPPER)
        try:
            os.link(tmp, path)  # fails if a file took the name meanwhile: never a replace
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: create it only if it is not there
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(WRAPPER)
        finally:
            tmp.unlink()
    except FileExistsError:
        return f"{path} appeared while the wrapper was written; it is left as it is"
    except OSError as e:
        return f"could not write {path}: {e.strerror or e}"
    return None
