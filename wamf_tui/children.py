"""Child processes the app starts (the script reader, the environment probe, `git ls-files`),
kept so quitting can stop them: a hung interpreter must not hold the exit, nor outlive the app.

Each child leads its own process group, so stopping it also stops what it started (a wrapper
script's `python`, a shell's `sleep`), and a timeout ends the whole group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading

_running: set[subprocess.Popen[str]] = set()
_lock = threading.Lock()


def run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess[str]:
    """Like `subprocess.run(..., capture_output=True, text=True, timeout=...)`, stoppable by `stop_all`.
    Raises OSError when it cannot start and `subprocess.TimeoutExpired` after killing it."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, **kw)
    with _lock:
        _running.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.communicate()
        raise
    finally:
        with _lock:
            _running.discard(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:  # already gone
        pass


def stop_all() -> None:
    """Kill every child still running, with what it started."""
    with _lock:
        for proc in _running:
            _kill(proc)
