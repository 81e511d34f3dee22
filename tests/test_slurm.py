"""The user's own Slurm jobs as the job's command, read from a real queue (`scripts/slurm-node` starts a
one-node cluster; CI runs it). Jobs are submitted held, so nothing ever runs, and cancelled after."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import make_repo

from wamf_tui.detect.run import detect_all
from wamf_tui.detect.slurm import fields, queued_jobs

TRAIN = "import torch\nfor step in range(100):\n    loss = model(x)\n    loss.backward()\n    optimizer.step()\n"


@pytest.fixture
def submit():
    """`submit(args)` queues a held job and gives its id; every job is cancelled at the end."""
    if shutil.which("sbatch") is None or subprocess.run(["sinfo", "-h"], capture_output=True).returncode != 0:
        if os.environ.get("CI"):
            pytest.fail("no Slurm: .ci/run starts one with scripts/slurm-node")
        pytest.skip("no Slurm here (scripts/slurm-node starts one)")
    ids: list[str] = []

    def queue(*args: str) -> str:
        out = subprocess.run(["sbatch", "--hold", "--parsable", *args], capture_output=True, text=True, check=True)
        ids.append(out.stdout.strip().split(";")[0])
        return ids[-1]

    yield queue
    subprocess.run(["scancel", *ids], capture_output=True)


def test_a_queued_job_is_the_command_and_comes_first(tmp_path, submit):
    """The README starts train.py; the user's queued job runs exp/a.py with its own arguments, from a batch
    script kept outside the repo: that job is the first candidate, with its command."""
    root = make_repo(tmp_path / "job", {"README.md": "```\npython train.py\n```\n", "train.py": TRAIN,
                                        "exp/a.py": TRAIN})
    script = tmp_path / "run.sbatch"
    script.write_text("#!/bin/bash\n#SBATCH --job-name=t\nLR=${LR:-0.1}\ncd $SLURM_SUBMIT_DIR\ncd exp\n"
                      "srun python a.py --lr $LR\n")
    job = submit(f"--chdir={root}", str(script))
    elsewhere = submit(f"--chdir={tmp_path}", "--wrap", "python train.py")  # not in the repo: not this job
    assert [j.id for j in queued_jobs(root)] == [job]
    scan = detect_all(root).scripts
    top = scan.candidates[0]
    assert (top.path, top.launch.command, top.launch.source) == ("exp/a.py", "cd exp && srun python a.py --lr 0.1",
                                                                 f"Slurm job {job} (pending)")
    assert f"Slurm job {elsewhere} " not in " ".join(r for c in scan.candidates for r in c.reasons)


def test_a_wrapped_job_in_a_subfolder_runs_from_it(tmp_path, submit):
    root = make_repo(tmp_path / "job", {"exp/train.py": TRAIN, "README.md": "```\npython exp/train.py\n```\n"})
    job = submit(f"--chdir={root / 'exp'}", "--wrap", "python train.py --epochs 2")
    launch = detect_all(root).scripts.candidates[0].launch
    assert (launch.command, launch.path, launch.source) == ("cd exp && python train.py --epochs 2", "exp/train.py",
                                                            f"Slurm job {job} (pending)")


def test_scontrol_lines_are_read_as_fields():
    """Values hold spaces and `=` (a command line); keys hold `:` and `/` (`AllocTRES`, `Socks/Node`)."""
    line = ("JobId=7 JobName=a b UserId=me(1) JobState=RUNNING Command=python t.py --x=1 lr=0.1 "
            "WorkDir=/w d Socks/Node=* TRES=cpu=1,mem=1G")
    got = fields(line)
    assert (got["JobName"], got["Command"], got["WorkDir"], got["Socks/Node"], got["TRES"]) == (
        "a b", "python t.py --x=1 lr=0.1", "/w d", "*", "cpu=1,mem=1G")


def test_no_slurm_no_jobs(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(Path(shutil.which("git") or "/usr/bin/git").parent.parent / "nonexistent"))
    assert queued_jobs(tmp_path) == []
