"""End to end in a real terminal: tmux runs the installed command, keys are sent, the screen is read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
WAMF = str(Path(sys.executable).parent / "wamf-tui")


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=False).stdout


def wait_for(session: str, text: str, timeout: float = 30) -> str:
    end = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < end:
        screen = tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared; screen was:\n{screen}")


def test_demo_enter_until_written(tmp_path, state_home):
    session = f"wamf-e2e-{os.getpid()}"
    out = tmp_path / "contract.md"
    env = f"XDG_STATE_HOME={state_home} TERM=xterm-256color"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40",
         f"env {env} {WAMF} --demo --contract {out}; sleep 60")
    try:
        wait_for(session, "How well do you know ML systems?")
        wait_for(session, "script")  # detection has filled the pane
        for _ in range(40):
            if out.exists():
                break
            tmux("send-keys", "-t", session, "Enter")
            time.sleep(0.6)
        screen = wait_for(session, "/who-ate-my-flops:optimize")
        assert "$who-ate-my-flops:optimize" in screen
    finally:
        tmux("kill-session", "-t", session)
    check = subprocess.run([WAMF, "check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
