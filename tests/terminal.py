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




def enter_until(session: str, done, timeout: float = 180) -> None:
    """Press Enter, wait until the screen changes (bounded), again, until `done()`: a fixed pause
    between keys is either too short on a loaded machine or wasted on a fast one."""
    end = time.monotonic() + timeout
    while not done():
        if time.monotonic() > end:
            screen = tmux("capture-pane", "-p", "-t", session)
            # an app that died printed its traceback and left the screen blank: it is in the history
            history = tmux("capture-pane", "-p", "-t", session, "-S", "-400")
            raise AssertionError(f"not done after {timeout} s of Enter; screen:\n{screen}\nhistory:\n{history}")
        before = tmux("capture-pane", "-p", "-t", session)
        tmux("send-keys", "-t", session, "Enter")
        settle = time.monotonic() + 5
        while time.monotonic() < settle and tmux("capture-pane", "-p", "-t", session) == before and not done():
            time.sleep(0.05)
