"""Child processes wamf-tui starts (the detection and the script reader for the app;
`git ls-files` for detection), kept so quitting can stop them: a hung git on a dead network
mount must not hold the exit, nor outlive the app.

In the app each child leads its own process group, so stopping it also stops what it started
(the detection's git, a wrapper script's `python`, a shell's `sleep`). The command-line
subcommands call `share_group()`: their children stay in the caller's group, so Ctrl-C in a
terminal, or the app stopping its detection child, stops them too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator

from .isolation import OUR_FOLDER, isolated_command

_running: dict[subprocess.Popen, Callable[[], None] | None] = {}  # a child -> how to stop it (None: kill)
_lock = threading.Lock()
_own_groups = True


def wamf_tui(*args: str) -> dict:
    """`run` / `Lines` arguments for a wamf-tui subcommand in a child, isolated (`python -I`): users
    start wamf-tui in their repo, often with PYTHONPATH on it, and its own `json.py` or
    `sitecustomize.py` must never be imported in place of the real one."""
    return {"cmd": isolated_command(*args), "cwd": OUR_FOLDER}


def share_group() -> None:
    """From now on children join this process's group instead of leading their own."""
    global _own_groups
    _own_groups = False


def _start(cmd: list[str], **kw) -> subprocess.Popen[str]:
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
                            start_new_session=_own_groups, **kw)
    track(proc)
    return proc


def track(proc: subprocess.Popen, stop: Callable[[], None] | None = None) -> None:
    """A child started elsewhere that `stop_all` must stop too; `stop` when killing its group is not how
    (a trial's supervisor ends the job's whole tree itself, escaped processes included)."""
    with _lock:
        _running[proc] = stop


def forget(proc: subprocess.Popen) -> None:
    with _lock:
        _running.pop(proc, None)


def run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess[str]:
    """Like `subprocess.run(..., capture_output=True, text=True, timeout=...)`, stoppable by `stop_all`.
    Raises OSError when it cannot start and `subprocess.TimeoutExpired` after killing it."""
    proc = _start(cmd, stderr=subprocess.PIPE, **kw)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.communicate()
        raise
    finally:
        forget(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


class Lines:
    """A child whose output is read line by line as it comes (the app's detection streams its
    results). Stopped by `stop`, by `stop_all`, or after `timeout` seconds (`expired` tells).
    Once read to the end, `error_line` holds the last line it wrote to stderr."""

    def __init__(self, cmd: list[str], timeout: float, **kw) -> None:
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        self.proc = _start(cmd, stderr=self._stderr, **kw)  # a file: a chatty child never blocks on it
        self.expired = False
        self.error_line = ""
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def _expire(self) -> None:
        self.expired = True
        self.stop()

    def __iter__(self) -> Iterator[str]:
        assert self.proc.stdout is not None
        try:
            yield from self.proc.stdout
            self.proc.wait()
        finally:
            self._timer.cancel()
            self.stop()
            self.proc.wait()
            self.proc.stdout.close()
            forget(self.proc)
            self._stderr.seek(0)
            said = self._stderr.read().strip().splitlines()
            self._stderr.close()
            self.error_line = said[-1] if said else ""  # a traceback's last line says what went wrong

    def stop(self) -> None:
        if self.proc.poll() is None:  # a child already reaped: its pid may belong to another by now
            _kill(self.proc)


def _kill(proc: subprocess.Popen[str]) -> None:
    if _own_groups:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
        return
    for pid in (*_descendants(proc.pid), proc.pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # already gone
            pass


def _descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs, from each process's parent in `/proc/N/stat` (psutil's
    way, without its import: a Slurm client outlasting `detect`'s budget is killed here); psutil where
    there is no /proc."""
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        import psutil

        try:
            return [p.pid for p in psutil.Process(pid).children(recursive=True)]
        except psutil.Error:
            return []
    kids: dict[int, list[int]] = {}
    for n in pids:
        try:
            with open(f"/proc/{n}/stat", "rb") as f:
                ppid = int(f.read().rpartition(b")")[2].split()[1])  # after the name, which may hold spaces
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(n)
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def stop_all() -> None:
    """Kill every child still running, with what it started."""
    with _lock:
        running = list(_running.items())
    for proc, stop in running:
        if stop is not None:
            stop()
        else:
            _kill(proc)
