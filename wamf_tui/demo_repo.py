"""The demo: the shipped training job, copied into a new git repository for `wamf-tui --demo`."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from importlib import resources
from pathlib import Path

from .infra import gitcmd
from .session import store as session


def make_demo(parent: str | None = None) -> Path:
    """Copy the shipped demo job into a new temporary git repository with one commit."""
    root = Path(tempfile.mkdtemp(prefix="wamf-demo-", dir=parent))
    _fill(root)
    return root


def demo_home() -> Path:
    return session.state_dir() / "demo"


def fresh_demo() -> Path:
    """`--demo`: the demo job made anew in the state folder, not in /tmp, so nothing is left behind
    there; the contract written into it stays to read after quitting, until the next `--demo`."""
    root = demo_home()
    shutil.rmtree(root, ignore_errors=True)
    session.forget(root)  # a new demo starts at the first question, not at a resume of the last one
    root.mkdir(parents=True)
    _fill(root)
    return root


def _fill(root: Path) -> None:
    """The demo job and one commit of it in `root`, an empty folder."""
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
