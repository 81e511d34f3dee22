"""`wamf-tui try --parse-only` on a `fire.Fire(fn)` job (#33): it stops once fire has bound the command
line to the function, before the function's body (which trains) runs; a flag the function does not take
fails with fire's own error, which fire itself gives only after the function has run. Real fire, installed
into a virtual environment made here, which also sees this environment's real torch."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui.bench import trial
from wamf_tui.contract import proof

FIRE_JOB = """import fire
import torch


def train(steps: int = 100, lr: float = 0.1, name="run"):
    open({marker!r}, "w").write("trained")
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    fire.Fire(train)
"""


@pytest.fixture(scope="module")
def fire_env(tmp_path_factory) -> str:
    """The activate line of a new virtual environment with fire from the package index."""
    venv = tmp_path_factory.mktemp("fire") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    got = subprocess.run([str(python), "-m", "pip", "install", "-q", "fire"], capture_output=True, text=True,
                         timeout=180)
    if got.returncode:
        pytest.skip(f"fire could not be installed from this machine's package index: {got.stderr[-300:]}")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")  # this environment's torch
    return f"export PATH={venv / 'bin'}:$PATH"


@pytest.mark.slow
@pytest.mark.parametrize("flags, ok", [("--steps=3 --lr=0.5", True), ("--steps=3 --bogus=1", False)])
def test_parse_only_stops_a_fire_job_once_fire_has_bound_its_arguments(tmp_path, fire_env, flags, ok):
    marker = tmp_path / "trained"
    repo = make_repo(tmp_path / "job", {"train.py": FIRE_JOB.format(marker=str(marker))})
    result = trial.Trial(fire_env, f"python train.py {flags}", repo, parse_only=True).run()
    verdict = proof.parsed(result)
    assert verdict.ok is ok and not marker.exists(), result  # the function's body never ran
    if ok:
        parsed = next(e for e in result.effects if e.kind == "parsed")
        assert (parsed.what, parsed.where) == ("fire", "train.py:16")
        assert parsed.values == {"steps": "3", "lr": "0.5", "name": "'run'"}
    else:
        assert result.exit_status == 2 and result.steps == 0
        assert verdict.observed == "the job's function does not take these arguments: ['--bogus=1']"
