"""`wamf-tui try --parse-only` on a `fire.Fire(fn)` job (#33): it stops once fire has bound the command
line to the function, before the function's body (which trains) runs; a flag the function does not take
fails with fire's own error, which fire itself gives only after the function has run. Real fire, installed
into a virtual environment made here, which also sees this environment's real torch."""

from __future__ import annotations

import pytest
from conftest import make_repo
from helpers import env_with

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
    return env_with(tmp_path_factory.mktemp("fire"), "fire")


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
