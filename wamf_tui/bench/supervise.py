"""The trial's supervisor: a small process between wamf-tui and the user's job, so that everything the
job starts is found and ended, `setsid` and double-forked processes included.

It makes itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): a descendant whose parent dies is
re-parented to it, not to init, so its descendants are exactly what the job started. It runs the
command in a process group of its own and writes `exit N` or `signal N` to the status file when the
command ends; then, or when told `term` on its stdin, or when its stdin closes (wamf-tui is gone), it
ends every descendant: SIGTERM, then SIGKILL after the grace period (at once after a normal exit:
a data loader's workers outlive their parent). It exits only when none is left, so its exit means the
job's output pipe has no writer left in its tree.

Run as `python -I supervise.py STATUS_FILE GRACE_S COMMAND...`; only the standard library and psutil.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

PR_SET_CHILD_SUBREAPER = 36
KILL_FOR_S = 2.0  # SIGKILL rounds after the grace period: a process stuck in the kernel is given up on


def subreaper() -> bool:
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux: the process group and the tree seen are all it has
        return False


def descendants() -> list[int]:
    """Every live process below this one (zombies are reaped, not signalled)."""
    import psutil

    try:
        tree = psutil.Process().children(recursive=True)
    except psutil.Error:
        return []
    live = []
    for p in tree:
        try:
            if p.status() != psutil.STATUS_ZOMBIE:
                live.append(p.pid)
        except psutil.Error:
            pass
    return live


def signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


class Supervisor:
    def __init__(self, status_file: str, grace_s: float, command: list[str]) -> None:
        self.status_file, self.grace_s, self.command = status_file, grace_s, command
        self.stop = threading.Event()
        self.main = 0
        self.status: str | None = None

    def reap(self) -> None:
        """Collect every child that ended, the command's status among them."""
        while True:
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if pid == self.main and self.status is None:
                self.status = f"signal {os.WTERMSIG(code)}" if os.WIFSIGNALED(code) else \
                    f"exit {os.WEXITSTATUS(code)}"
                with open(self.status_file, "w") as f:
                    f.write(self.status)

    def listen(self) -> None:
        """`term` on stdin, or stdin closing (wamf-tui quit or died): end the job."""
        for line in sys.stdin:
            if line.strip() == "term":
                break
        self.stop.set()

    def end_all(self, grace_s: float) -> None:
        if grace_s > 0:
            signal_all(descendants(), signal.SIGTERM)
            try:
                os.killpg(self.main, signal.SIGTERM)
            except OSError:
                pass
            end = time.monotonic() + grace_s
            while time.monotonic() < end:
                self.reap()
                if not descendants():
                    return
                time.sleep(0.05)
        end = time.monotonic() + KILL_FOR_S
        while time.monotonic() < end:
            left = descendants()
            if not left:
                return
            signal_all(left, signal.SIGSTOP)  # frozen first: a fork bomb cannot outpace the kills
            signal_all(descendants(), signal.SIGKILL)
            self.reap()
            time.sleep(0.02)

    def run(self) -> int:
        subreaper()
        signal.signal(signal.SIGTERM, lambda *_: self.stop.set())
        threading.Thread(target=self.listen, daemon=True).start()
        try:
            proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            print(f"wamf-tui: could not start the command: {e.strerror}", flush=True)
            with open(self.status_file, "w") as f:
                f.write("exit 127")
            return 0
        self.main = proc.pid
        while self.status is None and not self.stop.wait(0.05):
            self.reap()
        self.end_all(self.grace_s if self.status is None else 0.0)
        self.reap()
        proc.returncode = 0  # reaped above, not by Popen
        return 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches wamf-tui, which says `term`
    sys.exit(Supervisor(sys.argv[1], float(sys.argv[2]), sys.argv[3:]).run())
