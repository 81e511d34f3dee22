"""`wamf-tui try --parse-only` on HfArgumentParser jobs (#33): it stops once the parser has made the job's
dataclasses, from flags or from the YAML file the command names, before the job trains; a flag or a key the
dataclasses lack fails with the parser's own error. Real transformers, installed into a virtual environment
made here, which also sees this environment's real torch."""

from __future__ import annotations

import pytest
from conftest import make_repo
from helpers import env_with

from wamf_tui.bench import trial
from wamf_tui.contract import proof

HF_JOB = """import sys
from dataclasses import dataclass

import torch
from transformers import HfArgumentParser


@dataclass
class Args:
    steps: int = 100
    lr: float = 0.1


if __name__ == "__main__":
    parser = HfArgumentParser(Args)
    if len(sys.argv) == 2 and sys.argv[1].endswith(".yaml"):
        (args,) = parser.parse_yaml_file(sys.argv[1])
    else:
        (args,) = parser.parse_args_into_dataclasses()
    open({marker!r}, "w").write("trained")
    model = torch.nn.Linear(8, 1)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr)
    for _ in range(args.steps):
        model(torch.randn(4, 8)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
"""


@pytest.fixture(scope="module")
def hf_env(tmp_path_factory) -> str:
    """The activate line of a new virtual environment with transformers from the package index."""
    return env_with(tmp_path_factory.mktemp("hf"), "transformers")


@pytest.mark.slow
@pytest.mark.parametrize("command, ok", [
    ("python train.py --steps 3 --lr 0.5", True),
    ("python train.py --steps 3 --bogus 1", False),
    ("python train.py job.yaml", True),
    ("python train.py bad.yaml", False),
])
def test_parse_only_stops_an_hf_job_once_its_dataclasses_are_made(tmp_path, hf_env, command, ok):
    marker = tmp_path / "trained"
    repo = make_repo(tmp_path / "job", {"train.py": HF_JOB.format(marker=str(marker)),
                                        "job.yaml": "steps: 3\nlr: 0.5\n", "bad.yaml": "steps: 3\nwarmup: 2\n"})
    result = trial.Trial(hf_env, command, repo, parse_only=True).run()
    verdict = proof.parsed(result)
    assert verdict.ok is ok and not marker.exists(), result  # the job never trained
    if ok:
        parsed = next(e for e in result.effects if e.kind == "parsed")
        assert parsed.what == "HfArgumentParser" and parsed.where in ("train.py:17", "train.py:19")
    else:
        assert result.exit_status and result.steps == 0
        assert verdict.observed in ("the job's dataclasses have no field for these: ['--bogus', '1']",
                                    "the job's dataclasses have no field for these: ['warmup']"), verdict
