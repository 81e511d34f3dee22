"""The checkpoint rows' line hits (#33): `sys.monitoring` where the job's Python is 3.12 or newer (one
callback per watched line, none elsewhere), `sys.settrace` before that or when
WAMF_TRIAL_TRACER=settrace asks for it; either way only for the first LINE_STEPS optimizer steps.

No PyTorch wheel for 3.12 is in this machine's package index, so the 3.12 job counts its steps with its
own stand-in for `torch.optim.optimizer` (the two global step hooks the probe registers, as torch has
them); the 3.11 job is real PyTorch."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui.bench import trial
from wamf_tui.bench.step_probe import LINE_STEPS
from wamf_tui.contract import proof

STAND_IN = {  # torch.optim.optimizer's global step hooks, as the probe uses them
    "torch/__init__.py": "",
    "torch/optim/__init__.py": "",
    "torch/optim/optimizer.py": "_pre, _post = [], []\n"
                                "def register_optimizer_step_pre_hook(hook):\n    _pre.append(hook)\n"
                                "def register_optimizer_step_post_hook(hook):\n    _post.append(hook)\n"
                                "class Optimizer:\n    def __init__(self, params):\n"
                                "        self.param_groups = [{'params': list(params)}]\n"
                                "    def step(self):\n        for hook in _pre + _post:\n"
                                "            hook(self, (), {})\n",
}
JOB = """from torch.optim.optimizer import Optimizer
opt = Optimizer([])
total = 0
def work(step):
    return step * 2
for step in range(6):
    total += work(step)
    opt.step()
print(total)
"""
ROWS = (("loop", "train.py:7"), ("helper", "train.py:5"), ("after", "train.py:9"))


def python312() -> str | None:
    """A Python 3.12 or newer on this machine (a pyenv shim may run another version: each is asked)."""
    for found in [shutil.which("python3.12"), shutil.which("python3.13"),
                  *sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[2-9]*/bin/python3")))]:
        if found and subprocess.run([found, "-c", "import sys; sys.exit(sys.version_info < (3, 12))"],
                                    capture_output=True, timeout=30).returncode == 0:
            return found
    return None


def hits(tmp_path: Path, python: str, run_prefix: str = "") -> dict[str, tuple[set[int], set[str]]]:
    """{row line: (the steps it ran in, the tracers that saw it)} of a trial of the stand-in job."""
    repo = make_repo(tmp_path / "job", {**STAND_IN, "train.py": JOB})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(python)
    job = trial.Trial(f"export PATH={bin_dir}:$PATH", f"{run_prefix}python train.py", repo, grace_s=1.0)
    result = proof.run(job, proof.Expected(rows=ROWS))
    assert result.exit_status == 0 and result.steps == 6, result
    found: dict[str, tuple[set[int], set[str]]] = {}
    for e in result.effects:
        if e.kind == "line":
            steps, modes = found.setdefault(e.what, (set(), set()))
            steps.add(e.step)
            modes.add(e.mode)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("prefix, tracer", [("", "sys.monitoring"), ("WAMF_TRIAL_TRACER=settrace ", "settrace")])
def test_on_python_3_12_the_rows_lines_are_watched_with_sys_monitoring_unless_settrace_is_asked_for(
        tmp_path, prefix, tracer):
    python = python312()
    if python is None:
        pytest.skip("no Python 3.12 on this machine: the sys.monitoring path is not exercised")
    found = hits(tmp_path, python, prefix)
    first = set(range(LINE_STEPS))
    assert found["train.py:7"] == (first, {tracer})  # then nothing: the watch is off after LINE_STEPS steps
    assert found["train.py:5"] == (first, {tracer})  # a function the loop calls
    assert "train.py:9" not in found


@pytest.mark.slow
def test_before_3_12_the_rows_lines_are_traced_with_settrace(tmp_path):
    if sys.version_info >= (3, 12):
        pytest.skip("this interpreter has sys.monitoring")
    found = hits(tmp_path, sys.executable)
    assert found["train.py:7"] == (set(range(LINE_STEPS)), {"settrace"})


WORKERS = """import torch
class Data(torch.utils.data.Dataset):
    def __len__(self):
        return 64
    def __getitem__(self, i):
        return torch.ones(2) * i
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.0)
for x in torch.utils.data.DataLoader(Data(), batch_size=8, num_workers=1):
    model(x).sum().backward()
    opt.step()
"""


@pytest.mark.slow
def test_a_dataloader_worker_stops_watching_the_rows_lines_as_it_starts(tmp_path):
    """A worker never steps, so it would trace every line of the job's own Dataset for the whole run (13 times
    slower steps, measured): it stops as it starts. The main process's rows are watched as before."""
    repo = make_repo(tmp_path / "job", {"train.py": WORKERS})
    rows = (("item", "train.py:6"), ("forward", "train.py:10"))
    result = proof.run(trial.Trial("", f"{sys.executable} train.py", repo, grace_s=1.0), proof.Expected(rows=rows))
    assert result.exit_status == 0 and result.steps == 8, result
    seen = {e.what for e in result.effects if e.kind == "line"}
    assert "train.py:10" in seen and "train.py:6" not in seen


def test_a_frame_of_pythons_own_frozen_modules_is_never_the_jobs(monkeypatch, tmp_path):
    """`<frozen runpy>` made every stack in `try --json` end with `<frozen runpy>:88`: it was read as a path
    relative to the job's folder."""
    from wamf_tui.bench import step_probe

    monkeypatch.setattr(step_probe, "_REPO", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert step_probe._ours(str(tmp_path / "train.py")) and step_probe._ours("train.py")
    assert not step_probe._ours("<frozen runpy>") and not step_probe._ours("<string>")
