"""A trial of the benchmark command, the one time wamf-tui runs the user's job: only when the user
asked for it (`t`, then a second key, in the app; `wamf-tui try`).

Reading the code proves a flag exists; it cannot prove the dataset is where the job expects it or
that the download works on this node. The trial runs the contract's `activate` and `run` lines
through a shell, in their own process group, with a time limit, and measures what the optimizer
needs to start from: exit status, wall time, optimizer steps and their steady time (a probe on the
job's PYTHONPATH, `step_probe`), peak memory, and whatever the run wrote into the checkout.
"""

from __future__ import annotations

import os
import re
import select
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import cast

from ..model import Ended, HardwareFacts, TrialResult
from .output import gaps, likely_cause, plain, steady, terminal_safe, throughput
from .results import command_hash
from .supervise import KILL_FOR_S
from .traces import exit_status, read_effects, step_times, touched, touched_snapshot

DEFAULT_LIMIT_S = 600
GRACE_S = 10.0  # between SIGTERM and SIGKILL: a job may save or flush on SIGTERM
TAIL = 30  # output lines kept in the result
ACTIVATE_FAILED = 97
_WRAPPER = re.compile(r"^wamf_bench(-\d+)?\.py$")














def shell_script(activate: str, run: str) -> str:
    """What the shell runs: the activate line (a failure stops there, said), then the run line as written,
    but for the probe's folder put first on any PYTHONPATH it sets."""
    lines = []
    if re.search(r"\bconda\s+activate\b", activate):  # a non-interactive shell has no `conda activate`
        lines.append('command -v conda >/dev/null 2>&1 && eval "$(conda shell.bash hook 2>/dev/null)"')
    if activate.strip():
        lines.append(f"{{ {activate.strip()}\n}} || {{ echo 'wamf-tui: the activate line failed' >&2; "
                     f"exit {ACTIVATE_FAILED}; }}")
    lines.append('export PYTHONPATH="$WAMF_TRIAL_PROBE${PYTHONPATH:+:$PYTHONPATH}"')
    lines.append(re.sub(r"(?<![\w$])PYTHONPATH=", 'PYTHONPATH="$WAMF_TRIAL_PROBE":', run))  # `PYTHONPATH=. python ...`
    return "\n".join(lines) + "\n"


def with_wrapper_at(run: str, folder: Path, write: Callable[[Path], str | None], repo: Path) -> str:
    """The run line, with a benchmark wrapper it names but that is not written yet (the contract is
    not written until step 4) written into `folder` and named there instead: a trial writes nothing
    into the repo. A wrapper's path is the run line's, from the repo and its `cd`s, never wamf-tui's own folder."""
    try:
        words = shlex.split(run)
    except ValueError:
        return run
    where = repo
    for before, w in zip(["", *words], words, strict=False):
        if before == "cd":
            where = where / w
        elif _WRAPPER.match(Path(w).name) and not (where / w).exists():
            copy = folder / Path(w).name
            if write(copy) is None:
                run = run.replace(w, shlex.quote(str(copy)))
    return run


class Trial:
    """One run of the benchmark command. `run` blocks until it ends and returns the result; `stop`
    and `limit_s` may be used from another thread while it runs. `steps` and `last_step_s` are live."""

    def __init__(self, activate: str, run: str, repo: Path, *, limit_s: float = DEFAULT_LIMIT_S,
                 gpus: list[int] | None = None, grace_s: float = GRACE_S, log_dir: Path | None = None,
                 read_gpus: Callable[[], HardwareFacts] | None = None, lines: Iterable[str] = (),
                 parse_only: bool = False) -> None:
        self.activate, self.run_line, self.repo = activate, run, repo
        self.parse_only = parse_only  # stop each Python process once the job's parser has read its command line
        self.lines = list(lines)  # the checkpoint rows' file:line, traced for the claims (`proof`)
        self.limit_s, self.grace_s = limit_s, grace_s
        self.gpus = gpus or []
        self.log_dir = log_dir
        self.log_path: Path | None = None
        self._read_gpus = read_gpus
        self.started = 0.0
        self.steps = 0
        self.last_step_s: float | None = None
        self.ended = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self._tail: deque[str] = deque(maxlen=TAIL)
        self._peak_host = 0
        self._gpu_base: dict[int, int] = {}
        self._peak_gpu = 0
        self._peak_by_gpu: dict[int, int] = {}
        self._util = 0
        self._throughput = ""
        self._done = threading.Event()
        self._lock = threading.Lock()

    # --- running ---------------------------------------------------------------

    def run(self, on_line: Callable[[str], None] = lambda line: None) -> TrialResult:
        from ..infra import children
        from ..propose.wrapper import write_wrapper

        with tempfile.TemporaryDirectory(prefix="wamf-trial-") as tmp:
            folder = Path(tmp)
            shutil.copyfile(Path(__file__).with_name("step_probe.py"), folder / "sitecustomize.py")
            shutil.copyfile(Path(__file__).with_name("parse_probe.py"), folder / "wamf_parse_probe.py")
            steps_file, status_file, effects_file = folder / "steps", folder / "status", folder / "effects"
            run = with_wrapper_at(self.run_line, folder, write_wrapper, self.repo)
            env = {**os.environ, "WAMF_TRIAL_PROBE": str(folder), "WAMF_TRIAL_STEPS": str(steps_file),
                   "WAMF_TRIAL_EFFECTS": str(effects_file), "WAMF_TRIAL_REPO": str(self.repo),
                   "WAMF_TRIAL_LINES": "\n".join(self.lines), "PYTHONUNBUFFERED": "1",
                   "WAMF_TRIAL_PARSE_ONLY": "1" if self.parse_only else ""}
            before = touched_snapshot(self.repo)
            log = self._open_log()
            first_output: float | None = None
            self.started = time.monotonic()
            wall_start = datetime.now(timezone.utc)
            supervised = [sys.executable, "-I", str(Path(__file__).with_name("supervise.py")), str(status_file),
                          str(self.grace_s), _shell(), "-c", shell_script(self.activate, run)]
            try:
                self.proc = subprocess.Popen(supervised, cwd=self.repo, env=env, stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as e:
                return self._result(wall_start, None, None, [], [], cause=f"could not start a shell: {e.strerror}")
            children.track(self.proc, self.stop)
            watcher = threading.Thread(target=self._watch, args=(steps_file,), name="wamf-trial", daemon=True)
            watcher.start()
            try:
                for line in _lines(self.proc):
                    if first_output is None:
                        first_output = time.monotonic() - self.started
                    if log is not None:
                        log.write(line + "\n")
                    shown = terminal_safe(line)
                    self._tail.append(plain(shown))
                    self._throughput = throughput(plain(shown)) or self._throughput
                    on_line(shown)
                try:
                    self.proc.wait(self.grace_s + KILL_FOR_S + 1)
                except subprocess.TimeoutExpired:
                    self._kill_hard()
            finally:
                self._done.set()
                if self.proc.poll() is None:  # an error above, or ctrl+c: nothing may be left behind
                    self._end_now()
                children.forget(self.proc)
                for pipe in (self.proc.stdin, self.proc.stdout):
                    if pipe is not None:
                        pipe.close()
                if log is not None:
                    log.close()
            watcher.join(5)
            times = step_times(steps_file)
            result = self._result(wall_start, exit_status(status_file), first_output, times,
                                  touched(before, touched_snapshot(self.repo)))
            return result.model_copy(update={"effects": read_effects(effects_file)})

    def stop(self, why: str = "stopped") -> None:
        """End the job and everything it started (the supervisor's SIGTERM, then SIGKILL after the grace
        period); a supervisor that does not answer in time is killed here with its whole tree."""
        with self._lock:
            if self.ended or self.proc is None:
                return
            self.ended = why
        self._say_term()
        threading.Thread(target=self._kill_later, daemon=True).start()

    def _say_term(self) -> None:
        """`term` to the supervisor: SIGTERM to the job's tree, SIGKILL after the grace period."""
        try:
            assert self.proc is not None and self.proc.stdin is not None
            self.proc.stdin.write(b"term\n")
            self.proc.stdin.flush()
        except (OSError, ValueError):  # it has ended already
            pass

    def _kill_later(self) -> None:
        if not self._done.wait(self.grace_s + KILL_FOR_S + 1):
            self._kill_hard()

    def _end_now(self, wait_s: float = 2.0) -> None:
        """The job's end when the trial itself is interrupted (ctrl+c): SIGTERM through the supervisor first, as
        a stop does, so the job may flush and exit, then SIGKILL for whatever is left after `wait_s`."""
        assert self.proc is not None
        self._say_term()
        try:
            self.proc.wait(wait_s)
        except subprocess.TimeoutExpired:
            pass
        if self.proc.poll() is None:
            self._kill_hard()

    def _kill_hard(self) -> None:
        """The last resort, should the supervisor hang: SIGKILL for it and every process below it."""
        import psutil

        assert self.proc is not None
        try:
            tree = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            tree = []
        for p in (*tree, self.proc):
            try:
                p.kill()
            except (OSError, psutil.Error):
                pass

    def _watch(self, steps_file: Path) -> None:
        """Once a second: the limit, the steps so far, the process tree's memory, the GPUs' memory."""
        import psutil

        assert self.proc is not None
        try:
            root = psutil.Process(self.proc.pid)
        except psutil.Error:
            return
        while not self._done.wait(1.0):
            if time.monotonic() - self.started > self.limit_s:
                self.stop("limit")
            try:
                tree = root.children(recursive=True)  # the supervisor's own memory is not the job's
            except psutil.Error:
                tree = []
            rss = 0
            for p in tree:
                try:
                    rss += p.memory_info().rss
                except psutil.Error:
                    pass
            self._peak_host = max(self._peak_host, rss)
            times = step_times(steps_file)
            self.steps = len(times)
            self.last_step_s = times[-1] - times[-2] if len(times) > 1 else None
            self._sample_gpus()

    def _sample_gpus(self) -> None:
        if self._read_gpus is None or not self.gpus:
            return
        facts = self._read_gpus()
        used = 0
        for g in facts.gpus:
            if g.index in self.gpus:
                base = self._gpu_base.setdefault(g.index, g.memory_used_mib)
                grown = max(0, g.memory_used_mib - base)
                used += grown
                self._peak_by_gpu[g.index] = max(self._peak_by_gpu.get(g.index, 0), grown)
                self._util = max(self._util, g.utilization or 0)
        self._peak_gpu = max(self._peak_gpu, used)

    def _open_log(self):
        if self.log_dir is None:
            return None
        try:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            self.log_path = self.log_dir / f"trial-{time.strftime('%Y%m%d-%H%M%S')}.log"
            return open(self.log_path, "w", encoding="utf-8", errors="replace")
        except OSError:
            return None

    def _result(self, started: datetime, status: int | None, first_output: float | None, times: list[float],
                wrote: list[str], cause: str = "") -> TrialResult:
        warmup, steady_s = steady(times)
        ended = cast(Ended, self.ended or ("exited" if status is not None else "not started"))
        tail = list(self._tail)
        if not cause and ended == "exited" and status:  # a run stopped by the limit or the user did not fail
            cause = likely_cause(tail) or ("the activate line failed" if status == ACTIVATE_FAILED else "")
        return TrialResult(
            command_hash=command_hash(self.activate, self.run_line),
            started=started.strftime("%Y-%m-%d %H:%M UTC"),
            ended=ended,
            exit_status=status,
            wall_s=round(time.monotonic() - self.started, 2) if self.started else 0.0,
            first_output_s=round(first_output, 2) if first_output is not None else None,
            steps=len(times),
            step_times=[round(g, 6) for g in gaps(times)][-1000:],
            warmup=warmup,
            steady_s=round(steady_s, 6) if steady_s is not None else None,
            peak_host_mib=self._peak_host // 2**20 or None,
            peak_gpu_mib=self._peak_gpu or None if self.gpus and self._read_gpus else None,
            peak_gpu_by_device={str(i): m for i, m in sorted(self._peak_by_gpu.items()) if m},
            throughput=self._throughput,
            gpu_util=self._util or None if self.gpus and self._read_gpus else None,
            touched=wrote,
            tail=tail,
            cause=cause,
            log=str(self.log_path or ""),
        )


def default_limit(previous: TrialResult | None) -> float:
    """The time limit a trial starts with: twice what the last trial took, plus a minute for start-up
    (2 to 30 minutes); 10 minutes before any trial."""
    if previous is None or previous.ended != "exited" or not previous.wall_s:
        return DEFAULT_LIMIT_S
    return float(min(1800, max(120, round(2 * previous.wall_s + 60))))


def gpus_in_use(hardware: HardwareFacts, environ: dict[str, str] | os._Environ[str]) -> list[int]:
    """The GPUs the job will see: CUDA_VISIBLE_DEVICES when it names indices, else every one detected."""
    named = environ.get("CUDA_VISIBLE_DEVICES")
    if named is not None and re.fullmatch(r"\s*\d+(\s*,\s*\d+)*\s*|\s*", named):
        return [int(x) for x in named.split(",") if x.strip()]
    return [g.index for g in hardware.gpus]


def sample_gpus() -> HardwareFacts:
    from ..detect.hardware import read_gpus

    return read_gpus(HardwareFacts(host=""))


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _lines(proc: subprocess.Popen[bytes]) -> Iterable[str]:
    """Output lines as they come; a carriage return (a progress bar redrawn) ends a line too. Never waits
    on the pipe once the supervisor has exited (everything in its tree is gone by then): a process outside
    it that holds the pipe cannot hold the trial. What the tree wrote before it exited is read to the end:
    a job's last line (its error) can land between a wait that found nothing and the check that it exited."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    pending = [b""]

    def split(chunk: bytes) -> list[str]:
        *done, pending[0] = re.split(rb"\r\n|\n|\r", pending[0] + chunk)
        return [raw.decode("utf-8", errors="replace") for raw in done if raw.strip()]

    while True:
        if not select.select([fd], [], [], 0.2)[0]:
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        yield from split(chunk)
    for _ in range(64):  # bounded: an escaped process still writing never holds the trial
        if not select.select([fd], [], [], 0)[0] or not (chunk := os.read(fd, 65536)):
            break
        yield from split(chunk)
    if pending[0].strip():
        yield pending[0].decode("utf-8", errors="replace")








# --- what the run wrote into the checkout ----------------------------------------------




