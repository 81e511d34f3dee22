"""The demo: the shipped training job, copied into a new git repository for `wamf-tui --demo`."""

from __future__ import annotations

import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from . import gitcmd


def make_demo(parent: str | None = None) -> Path:
    """Copy the shipped demo job into a new temporary git repository with one commit."""
    root = Path(tempfile.mkdtemp(prefix="wamf-demo-", dir=parent))
    src = resources.files("wamf_tui") / "demo"
    for name in ("train.py", "README.md"):
        (root / name).write_bytes((src / name).read_bytes())
    (root / ".gitignore").write_text("runs/\n__pycache__/\n")
    env = {
        "GIT_AUTHOR_NAME": "wamf demo", "GIT_AUTHOR_EMAIL": "demo@localhost",
        "GIT_COMMITTER_NAME": "wamf demo", "GIT_COMMITTER_EMAIL": "demo@localhost",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "demo training job"]):
        subprocess.run(gitcmd.argv(root, *args), env=gitcmd.env(env), check=True, capture_output=True)
    return root
