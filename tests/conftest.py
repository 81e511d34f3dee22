"""Shared fixtures: real git repositories in temp dirs, and a private state directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

# The package next to these tests comes first, not the editable install: a copy of the repo (mutmut's
# `mutants/`, a scratch clone) must test its own code.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pytest  # noqa: E402
from terminal import tmux  # noqa: E402

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@localhost",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@localhost",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null",
}


def git(root: Path, *args: str) -> str:
    out = subprocess.run(["git", *args], cwd=root, env={**os.environ, **GIT_ENV}, check=True,
                         capture_output=True, text=True)
    return out.stdout


def make_repo(root: Path, files: dict[str, str] | None = None, commit: bool = True) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    for name, text in (files or {"train.py": "import torch\n"}).items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "first commit")
    return root


@pytest.fixture(autouse=True)
def state_home(tmp_path_factory, monkeypatch) -> Path:
    """Sessions are saved under a temp XDG_STATE_HOME, never the developer's own."""
    d = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("XDG_STATE_HOME", str(d))
    return d


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "job")


@pytest.fixture(scope="module")
def tmux_server():
    """One private server for these tests, held by a session of its own: a server exits with its
    last session, and one exiting just as the next test starts its session can lose it."""
    tmux("new-session", "-d", "-s", "keep", "sleep 3600")
    socket = tmux("display-message", "-p", "-t", "keep", "#{socket_path}").strip()
    yield
    tmux("kill-server")
    if socket:
        Path(socket).unlink(missing_ok=True)
