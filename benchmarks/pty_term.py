"""A bare pseudo-terminal for the benchmarks: the app's bytes as they are written.

Polling `tmux capture-pane` every few milliseconds starts a process each time, and on a
2-core machine those compete with the app they measure. Reading the pty's master side
costs nothing while it waits, and sees a frame the moment it is written.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time

_ESCAPE = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|P[^\x1b]*\x1b\\|.)")


def visible(raw: bytes) -> str:
    """The text in terminal output, without its escape sequences."""
    return _ESCAPE.sub(b"", raw).decode("utf-8", errors="replace")


class Term:
    def __init__(self, argv: list[str], env: dict[str, str], cols: int = 120, rows: int = 40) -> None:
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: size its terminal, then become the program
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execvpe(argv[0], argv, env)
        self.started = time.perf_counter()
        self.raw = b""

    def read(self, timeout: float) -> bool:
        """Read what is there within `timeout` s; False when nothing came."""
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.fd, 1 << 16)
        except OSError:  # the program ended
            return False
        self.raw += chunk
        return bool(chunk)

    def wait_for(self, text: str, since: int = 0, timeout: float = 60) -> float:
        """The time `text` was first on screen, in what came after byte `since`."""
        end = time.perf_counter() + timeout
        while time.perf_counter() < end:
            if self.read(0.5) and text in visible(self.raw[since:]):
                return time.perf_counter()
        raise SystemExit(f"{text!r} never appeared; last: {visible(self.raw[-400:])!r}")

    def drain(self, quiet: float = 0.05) -> None:
        while self.read(quiet):
            pass

    def send(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def close(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        os.waitpid(self.pid, 0)
        os.close(self.fd)
