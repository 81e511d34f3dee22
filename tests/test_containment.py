"""A trial contains everything it starts (#33 item 5): a job that calls `setsid` or double-forks leaves
nothing behind after it ends, is stopped, hits its limit, or the app quits; an escaped process holding
the output pipe never holds the trial. Real processes, no torch: these run in a second or two."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from conftest import make_repo

from wamf_tui.bench import trial
from wamf_tui.infra import children

# Ignores SIGTERM, and so do its escapes (SIG_IGN survives fork and exec): only SIGKILL ends them.
ESCAPES = """import os, signal, subprocess, sys, time
pids = sys.argv[1]
def note(pid):
    open(os.path.join(pids, str(pid)), "w").close()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
note(subprocess.Popen(["sleep", "300"], start_new_session=True).pid)  # setsid: out of the trial's group
if os.fork() == 0:  # double fork: the sleeper's parent exits at once, it is re-parented
    if os.fork() == 0:
        note(os.getpid())
        os.execvp("sleep", ["sleep", "300"])
    os._exit(0)
os.wait()
note(os.getpid())
os.write(1, b"up\\n")
if sys.argv[2] == "stay":
    time.sleep(300)
"""


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.fixture
def job(tmp_path):
    """(repo, pid folder); whatever the test leaves running is killed after it, so a failure never leaks."""
    pids = tmp_path / "pids"
    pids.mkdir()
    repo = make_repo(tmp_path / "job", {"train.py": ESCAPES})
    yield repo, pids
    for p in pids.iterdir():
        try:
            os.kill(int(p.name), signal.SIGKILL)
        except OSError:
            pass


def started(pids: Path, n: int = 3) -> list[int]:
    end = time.monotonic() + 30
    while time.monotonic() < end and len(list(pids.iterdir())) < n:
        time.sleep(0.05)
    return [int(p.name) for p in pids.iterdir()]


def in_thread(job: trial.Trial, on_line=lambda line: None) -> tuple[threading.Thread, list]:
    """The trial in a thread, so a trial that hangs fails the test instead of holding it."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(job.run(on_line)), daemon=True)
    t.start()
    return t, out


def test_a_job_that_exits_leaving_escaped_processes_ends_at_once_with_none_left(job):
    repo, pids = job
    t, out = in_thread(trial.Trial("", f"{sys.executable} train.py {pids} exit", repo, grace_s=1.0))
    t.join(60)  # the double-forked sleeper holds the output pipe for 300 s
    assert not t.is_alive(), "the trial waited on a pipe an escaped process holds"
    assert (out[0].ended, out[0].exit_status) == ("exited", 0)
    left = [pid for pid in started(pids) if not gone(pid)]
    assert len(list(pids.iterdir())) == 3 and not left, f"left running: {left}"


@pytest.mark.parametrize("how", ["stop", "limit", "quit"])
def test_stop_limit_and_quit_end_every_escaped_process_within_the_grace_period(job, how):
    repo, pids = job
    grace = 1.0
    asked: list[float] = []
    runner = trial.Trial("", f"{sys.executable} train.py {pids} stay", repo, grace_s=grace,
                         limit_s=1.0 if how == "limit" else 600)

    def on_line(line: str) -> None:
        if line == "up" and how != "limit":
            started(pids)
            asked.append(time.monotonic())
            runner.stop() if how == "stop" else children.stop_all()  # quitting the app calls stop_all

    t, out = in_thread(runner, on_line)
    t.join(60)
    assert not t.is_alive(), "the trial never ended"
    ended = time.monotonic()
    pid_list = started(pids)
    assert len(pid_list) == 3
    assert not [pid for pid in pid_list if not gone(pid)]
    assert out[0].ended == ("limit" if how == "limit" else "stopped")
    if asked:  # SIGTERM is ignored by all three: SIGKILL after the grace period, and no longer
        assert ended - asked[0] < grace + 2 + 3  # 3 s of slack for a loaded 2-core machine


def test_the_supervisor_ends_the_job_when_wamf_tui_dies(job):
    """wamf-tui killed outright (no quit, no stop): the supervisor's stdin closes and it ends the job."""
    repo, pids = job
    runner = trial.Trial("", f"{sys.executable} train.py {pids} stay", repo, grace_s=0.5)
    t, _ = in_thread(runner)
    pid_list = started(pids)
    assert len(pid_list) == 3
    assert runner.proc is not None and runner.proc.stdin is not None
    runner.proc.stdin.close()  # what the kernel does to a killed wamf-tui's end of the pipe
    end = time.monotonic() + 30
    while time.monotonic() < end and not all(gone(pid) for pid in pid_list):
        time.sleep(0.1)
    assert all(gone(pid) for pid in pid_list)
    t.join(30)
    assert not t.is_alive()


def test_a_command_line_child_past_its_time_is_killed_with_what_it_started_without_psutil():
    """`detect` and `check` share the terminal's process group (`share_group`): a child past its time (a
    Slurm client whose controller never answers) is killed with its own children, found from /proc, and
    the command does not import psutil to do it."""
    probe = ("import subprocess, sys\nfrom wamf_tui.infra import children\nchildren.share_group()\n"
             "try:\n    children.run(['sh', '-c', 'sleep 300 & echo $!; wait'], 5)\n"
             "except subprocess.TimeoutExpired as e:\n    print((e.stdout or b'').decode().strip() or 'no pid')\n"
             "print('psutil' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    lines = out.stdout.split()
    assert len(lines) == 2 and lines[1] == "False", (out.stdout, out.stderr[-500:])
    sleeper = int(lines[0])
    deadline = time.monotonic() + 30
    while not gone(sleeper) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(sleeper)


POLITE = """import signal, sys, time
def done(*_):
    open("got_term", "w").close()
    sys.exit(0)
signal.signal(signal.SIGTERM, done)
print("up", flush=True)
time.sleep(300)
"""


def test_ctrl_c_on_a_trial_asks_the_job_to_end_before_it_kills_it(tmp_path):
    """Ctrl-C in `wamf-tui try` killed the job at once with SIGKILL; a stop sends SIGTERM first, so the job can
    flush its logs. The interruption now ends it the same way, and nothing is left."""
    repo = make_repo(tmp_path / "job", {"job.py": POLITE})
    job = trial.Trial("", f"{sys.executable} job.py", repo, grace_s=1.0)

    def interrupt(line: str) -> None:
        if "up" in line:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        job.run(interrupt)
    assert (repo / "got_term").exists()
    assert job.proc is not None and job.proc.poll() is not None


def test_a_child_that_times_out_is_stopped_with_what_it_started(tmp_path):
    """A detection child whose git hangs on a dead mount: its timeout stops the child's whole group, so the
    `sleep` it started (the hung git) is gone too, not only the child."""
    note = tmp_path / "grandchild"
    script = (f"import subprocess, time\np = subprocess.Popen(['sleep', '60'])\n"
              f"open({str(note)!r}, 'w').write(str(p.pid))\ntime.sleep(300)\n")
    with pytest.raises(subprocess.TimeoutExpired):
        children.run([sys.executable, "-c", script], timeout=2.0)
    pid = int(note.read_text())
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie":
        time.sleep(0.05)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == "zombie"
