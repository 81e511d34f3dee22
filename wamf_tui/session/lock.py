"""One live session per repo. Two instances on one repo used to overwrite each other's answers (the
one that quit last won). The first takes a lock beside the state file, naming its process, host and
terminal; a second opens read-only (it saves nothing) and says who holds the session, until the user
takes it over. A lock whose process is gone is stale and simply taken. The instance taken over from
learns it before its next save (`still_mine`): it stops saving and says so, so the last writer never
wins over the one that holds the session."""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from ..infra.files import TooLarge, read_text
from .store import state_file

LIMIT = 4096  # a lock is one line of JSON: a FIFO or a link to /dev/zero named as the lock never hangs us


@dataclass(frozen=True)
class Holder:
    pid: int
    host: str
    tty: str

    def describe(self) -> str:
        return f"process {self.pid} on {self.tty or 'no terminal'}" + (
            f" ({self.host})" if self.host != socket.gethostname() else "")


def lock_file(repo_path: str | Path) -> Path:
    return state_file(repo_path).with_suffix(".lock")


def _me() -> Holder:
    try:
        tty = os.ttyname(sys.stdin.fileno())
    except (OSError, ValueError):
        tty = ""
    return Holder(os.getpid(), socket.gethostname(), tty)


def holder(repo_path: str | Path) -> Holder | None:
    """Who holds the session now: a live process on this host (or any on another host), else None."""
    try:
        data = json.loads(read_text(lock_file(repo_path), LIMIT))
        found = Holder(int(data["pid"]), str(data["host"]), str(data.get("tty", "")))
    except (OSError, ValueError, KeyError, TypeError):  # TooLarge is a ValueError
        return None
    if found.host == socket.gethostname():
        if found.pid == os.getpid():
            return None
        try:
            os.kill(found.pid, 0)
        except ProcessLookupError:
            return None  # stale: its process is gone
        except PermissionError:
            pass  # alive, another user's
        if _zombie(found.pid):
            return None  # killed, not yet reaped (a container's init may never reap it): gone too
    return found


def _zombie(pid: int) -> bool:
    """Whether `pid` has exited and only waits to be reaped (Linux: state Z in /proc/PID/stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def take(repo_path: str | Path) -> None:
    """Hold the session (a first start, or taking it over from another instance)."""
    path = lock_file(repo_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    me = _me()
    tmp = path.with_name(f".{path.name}.{me.pid}")
    tmp.write_text(json.dumps({"pid": me.pid, "host": me.host, "tty": me.tty}), encoding="utf-8")
    os.replace(tmp, path)


def still_mine(repo_path: str | Path) -> bool:
    """Whether this process still holds the session it took (checked before every save). A lock naming
    another process, or none at all (another took it over and has quit since), means it was taken over:
    its answers may be newer than ours."""
    try:
        data = json.loads(read_text(lock_file(repo_path), LIMIT))
    except (OSError, ValueError, TooLarge):
        return False
    try:
        return int(data["pid"]) == os.getpid() and data.get("host") == socket.gethostname()
    except (KeyError, TypeError, ValueError):
        return False


def release(repo_path: str | Path) -> None:
    """Give the session up, if this process holds it."""
    path = lock_file(repo_path)
    try:
        data = json.loads(read_text(path, LIMIT))
        if int(data["pid"]) == os.getpid() and data.get("host") == socket.gethostname():
            path.unlink()
    except (OSError, ValueError, KeyError, TypeError):
        pass
