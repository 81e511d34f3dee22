"""A real terminal for the end-to-end tests: a private tmux server, keys in, the screen out."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

WAMF = str(Path(sys.executable).parent / "wamf-tui")


SOCKET = f"wamf-test-{os.getpid()}"  # a private tmux server: not the developer's, nor its environment


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], capture_output=True, text=True, check=False).stdout


def wait_for(session: str, text: str, timeout: float = 30) -> str:
    end = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < end:
        screen = tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.2)
    history = tmux("capture-pane", "-p", "-t", session, "-S", "-400")
    raise AssertionError(f"{text!r} never appeared; screen was:\n{screen}\nhistory:\n{history}")


def wait_for_gone(session: str, text: str, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text not in tmux("capture-pane", "-p", "-t", session):
            return
        time.sleep(0.2)
    raise AssertionError(f"{text!r} still on screen")


