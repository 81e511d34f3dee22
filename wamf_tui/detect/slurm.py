"""The user's own Slurm jobs, queued or running, whose folder is in the repo: the job as they really start it.

On a Slurm node the best evidence of how a job runs is the job already in the queue. Read-only
client calls (`squeue --me`, `scontrol show job`, `scontrol write batch_script ... -`) give each
job's folder and its batch script (or, for a job started with `srun`, its command); the script is
then read like any sbatch file of the repo. Nothing is submitted, changed or cancelled. Bounded:
a few jobs, a few seconds in all; no Slurm, or one that does not answer, gives nothing.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..infra import children

SOURCE = "Slurm job"  # how a queued job's command is sourced: `Slurm job 24 (pending)`
MAX_JOBS = 8
TIME_BUDGET_S = 4.0
# scontrol's keys are CamelCase (`JobState`, `Socks/Node`): a `lr=0.1` inside a command is part of its value
_FIELD = re.compile(r"(?:^|\s)([A-Z][\w:/]*)=(.*?)(?=\s+[A-Z][\w:/]*=|\s*$)")


@dataclass
class QueuedJob:
    """One of the user's jobs: `script` is its batch script, or the command an `srun` job runs."""

    id: str
    state: str
    folder: str  # the job's working folder, from the repo root ("" for the root)
    script: str

    @property
    def source(self) -> str:
        return f"{SOURCE} {self.id} ({self.state.lower()})"


def fields(line: str) -> dict[str, str]:
    """`scontrol show job -o` output (`Key=Value Key=Value ...`, values may hold spaces) as a dict."""
    return {m.group(1): m.group(2) for m in _FIELD.finditer(line.strip())}


def queued_jobs(root: Path) -> list[QueuedJob]:
    """The user's queued and running jobs that work inside `root`, newest first; [] without Slurm."""
    if shutil.which("squeue") is None or shutil.which("scontrol") is None:
        return []
    deadline = time.monotonic() + TIME_BUDGET_S
    ids = _ask(["squeue", "--me", "--noheader", "--format=%i", "--sort=-V"], deadline)
    found: list[QueuedJob] = []
    for job in (ids or "").split()[:MAX_JOBS]:
        info = fields(_ask(["scontrol", "show", "job", "-o", job], deadline) or "")
        folder = _inside(info.get("WorkDir", ""), root)
        if folder is None or not info.get("JobState"):
            continue
        if info.get("BatchFlag") == "1":
            script = _ask(["scontrol", "write", "batch_script", job, "-"], deadline)
        else:
            script = info.get("Command")
        if script:
            found.append(QueuedJob(id=job, state=info["JobState"], folder=folder, script=script))
    return found


def _ask(cmd: list[str], deadline: float) -> str | None:
    """A Slurm client's output, None when it fails or the time is spent."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    try:
        out = children.run(cmd, left, encoding="utf-8", errors="replace")
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def _inside(folder: str, root: Path) -> str | None:
    """`folder` relative to the repo root, None when it lies outside it."""
    if not folder:
        return None
    try:
        rel = Path(os.path.realpath(folder)).relative_to(os.path.realpath(root))
    except ValueError:
        return None
    return "" if str(rel) == "." else str(rel)
