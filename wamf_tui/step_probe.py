"""Copied as `sitecustomize.py` onto a trial's PYTHONPATH (`wamf_tui.trial`), so every Python
process the trial starts (torchrun's and accelerate's workers inherit the path) appends one line,
`PID TIME`, to the file named by WAMF_TRIAL_STEPS after each outermost optimizer step: the step time
is measured whatever the launcher, and the command and the code stay as they are.

It waits for `torch.optim.optimizer` to be imported (importing torch here would slow every Python
the job starts, the launcher's included), registers torch's global step hooks there, and then runs
the `sitecustomize` it shadows, if the job's environment has one. It never raises into the job.
"""

import os
import sys
import time

_FILE = os.environ.get("WAMF_TRIAL_STEPS")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _hooks(optimizer_module) -> None:
    """A step inside a step (an optimizer container that steps the ones it holds) is not counted again."""
    depth = [0]
    fd = os.open(_FILE or os.devnull, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    pid = os.getpid()

    def pre(_opt, _args, _kwargs):
        depth[0] += 1

    def post(_opt, _args, _kwargs):
        depth[0] = max(0, depth[0] - 1)
        if depth[0] == 0:
            try:
                os.write(fd, f"{pid} {time.time():.6f}\n".encode())  # one short O_APPEND write: ranks never interleave
            except OSError:
                pass

    optimizer_module.register_optimizer_step_pre_hook(pre)
    optimizer_module.register_optimizer_step_post_hook(post)


class _Watch:
    """A meta-path finder that only notices `torch.optim.optimizer` being imported."""

    def find_spec(self, name, path, target=None):
        if name != "torch.optim.optimizer":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        sys.meta_path.remove(self)
        loader = spec.loader
        original = loader.exec_module

        def exec_module(module):
            original(module)
            try:
                _hooks(module)
            except Exception:
                pass

        loader.exec_module = exec_module
        return spec


def _chain() -> None:
    """The job's own `sitecustomize`, which this file shadows, still runs."""
    import importlib.machinery
    import importlib.util

    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


if _FILE:
    try:
        sys.meta_path.insert(0, _Watch())
    except Exception:
        pass
try:
    _chain()
except Exception:
    pass
