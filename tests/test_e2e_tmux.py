"""End to end in a real terminal: tmux runs the installed command, keys are sent, the screen is read."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from terminal import WAMF, enter_until, tmux, wait_for, wait_for_gone

pytestmark = [pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
              pytest.mark.usefixtures("tmux_server"), pytest.mark.slow]


def test_demo_enter_until_written(tmp_path, state_home):
    session = f"wamf-e2e-{os.getpid()}"
    out = tmp_path / "contract.md"
    env = f"XDG_STATE_HOME={state_home} TERM=xterm-256color"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40",
         f"env {env} {WAMF} --demo --contract {out}; sleep 60")
    tmux("resize-window", "-t", session, "-x", "120", "-y", "40")
    try:
        wait_for(session, "How well do you know ML systems?")
        wait_for_gone(session, "checking…")  # detection has filled the pane
        enter_until(session, out.exists)
        screen = wait_for(session, "/who-ate-my-flops:optimize")
        assert "$who-ate-my-flops:optimize" in screen
    finally:
        tmux("kill-session", "-t", session)
    check = subprocess.run([WAMF, "check", str(out)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def start(session: str, state_home: Path, args: str, env: str = "") -> None:
    env = f"XDG_STATE_HOME={state_home} TERM=xterm-256color {env}"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", f"env {env} {WAMF} {args}; sleep 600")
    tmux("resize-window", "-t", session, "-x", "120", "-y", "40")


def app_pid(session: str) -> int:
    shell = int(tmux("display-message", "-p", "-t", session, "#{pane_pid}").strip())
    out = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
    return int(out[0])


def saved_text(state_home: Path) -> str:
    files = list((state_home / "wamf-tui").glob("*.json"))
    return files[0].read_text() if files else ""


def current_step(state_home: Path) -> int:
    import json

    text = saved_text(state_home)
    return json.loads(text)["step"] if text else 0


def enter_and_wait_for_save(session: str, state_home: Path, timeout: float = 30) -> None:
    """Press Enter, then wait until the saved session changes: the saver writes after the screen,
    and on a slow machine a fixed pause let the next Enter land one step further than read."""
    before = saved_text(state_home)
    tmux("send-keys", "-t", session, "Enter")
    end = time.monotonic() + timeout
    while time.monotonic() < end and saved_text(state_home) == before:
        time.sleep(0.1)
    settled = saved_text(state_home)
    while time.monotonic() < end:  # one key can save twice (answer, then step): wait for quiet
        time.sleep(0.4)
        now = saved_text(state_home)
        if now == settled:
            break
        settled = now


@pytest.mark.parametrize("kill_at", [0, 1, 2, 3, 4])
def test_kill_9_then_resume_keeps_every_answer(tmp_path, state_home, kill_at):
    import signal

    from wamf_tui import demo_repo

    repo = demo_repo.make_demo(str(tmp_path))
    out = tmp_path / "contract.md"
    name = f"wamf-kill-{os.getpid()}-{kill_at}"
    start(name, state_home, f"{repo} --contract {out}")
    try:
        wait_for(name, "How well do you know ML systems?")
        wait_for_gone(name, "checking…")
        tmux("send-keys", "-t", name, "-l", "zebra-reader-7731")
        tmux("send-keys", "-t", name, "Enter")
        wait_for(name, "The repository to speed up")
        for _ in range(2):  # accept two more questions
            enter_and_wait_for_save(name, state_home)
        for _ in range(40):
            if current_step(state_home) >= kill_at:
                break
            enter_and_wait_for_save(name, state_home)
        assert not out.exists(), "the contract was written before the kill: the test went a step too far"
        os.kill(app_pid(name), signal.SIGKILL)
        tmux("kill-session", "-t", name)
        start(name, state_home, f"{repo} --contract {out}")
        wait_for(name, "A saved session exists")
        tmux("send-keys", "-t", name, "1")
        enter_until(name, out.exists)
        wait_for(name, "/who-ate-my-flops:optimize")
    finally:
        tmux("kill-session", "-t", name)
    assert "reader          zebra-reader-7731" in out.read_text()


def test_hangup_saves_and_exits(tmp_path, state_home):
    from wamf_tui import demo_repo
    from wamf_tui.session import store as session

    repo = demo_repo.make_demo(str(tmp_path))
    name = f"wamf-hup-{os.getpid()}"
    start(name, state_home, str(repo))
    wait_for(name, "How well do you know ML systems?")
    tmux("send-keys", "-t", name, "Enter")
    wait_for(name, "The repository to speed up")
    pid = app_pid(name)
    tmux("kill-session", "-t", name)  # the terminal goes away, as when SSH drops
    for _ in range(50):
        if not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text():
            break
        time.sleep(0.1)
    else:
        os.kill(pid, 9)
        raise AssertionError("the app did not exit on SIGHUP")
    saved = session.load(repo)
    assert saved is not None and saved.reader.startswith("I am an algorithm engineer")


def written_demo(tmp_path: Path, state_home: Path, name: str, env: str = "") -> Path:
    """The demo's contract written from an empty answers file; the session is left at the closing words."""
    from wamf_tui import demo_repo

    repo = demo_repo.make_demo(str(tmp_path))
    answers = tmp_path / "a.json"
    answers.write_text("{}")
    raw = tmp_path / "pane.bytes"
    start(name, state_home, f"{repo} --answers {answers}", env=env)
    tmux("pipe-pane", "-o", "-t", name, f"cat >> {raw}")
    wait_for(name, "Does it describe the job")
    tmux("send-keys", "-t", name, "y")
    wait_for(name, "/who-ate-my-flops:optimize")
    return raw


def test_copy_inside_tmux_goes_into_tmuxs_buffer(tmp_path, state_home):
    """tmux 3.3 drops a wrapped OSC 52 unless allow-passthrough is on: the copy goes through
    `tmux load-buffer -w`, read back here from the server's buffer, and the screen says so."""
    name = f"wamf-copy-{os.getpid()}"
    tmux("set-buffer", "-b", "before", "not the command")
    try:
        written_demo(tmp_path, state_home, name)
        tmux("send-keys", "-t", name, "c")
        screen = wait_for(name, "Copied into tmux's paste buffer")
    finally:
        tmux("kill-session", "-t", name)
    assert tmux("show-buffer") == "/who-ate-my-flops:optimize"
    assert "/who-ate-my-flops:optimize" in screen.split("paste buffer", 1)[1]  # selectable on screen too


def test_copy_falls_back_to_osc52_wrapped_for_tmux(tmp_path, state_home):
    """A tmux whose server cannot be reached for load-buffer (here: $TMUX names no server) gets the
    OSC 52 in tmux's passthrough, and the screen says that way and shows the text."""
    import base64

    name = f"wamf-osc-{os.getpid()}"
    try:
        raw = written_demo(tmp_path, state_home, name, env=f"TMUX={tmp_path}/no-server,1,0")
        tmux("send-keys", "-t", name, "c")
        wait_for(name, "allow-passthrough")
    finally:
        tmux("kill-session", "-t", name)
    payload = base64.b64encode(b"/who-ate-my-flops:optimize")
    assert b"\x1bPtmux;\x1b\x1b]52;c;" + payload + b"\x07\x1b\\" in raw.read_bytes()


def test_osc52_plain_outside_tmux():
    from wamf_tui.infra.clipboard import Way, copy, osc52

    assert osc52("hi", {}) == "\x1b]52;c;aGk=\x07"
    assert osc52("hi", {"TMUX": "/tmp/tmux-0/default,1,0"}) == "\x1bPtmux;\x1b\x1b]52;c;aGk=\x07\x1b\\"
    assert copy("hi", {"PATH": os.environ["PATH"]}) == (Way.OSC52, "\x1b]52;c;aGk=\x07")


def test_quitting_never_waits_for_a_hung_nvml(tmp_path, state_home):
    """NVML can hang on a broken node. The app's GPU refresh thread cannot be stopped, so quitting
    must not wait for it: asyncio joins its executor's threads at exit, the app's are daemons.
    The detection child gets its answer; the refresh that follows in the app hangs."""
    from wamf_tui import demo_repo

    repo = demo_repo.make_demo(str(tmp_path))
    fake = tmp_path / "fake-nvml"
    fake.mkdir()
    answered, entered = tmp_path / "nvml-answered", tmp_path / "nvml-entered"
    (fake / "pynvml.py").write_text(  # faked at the binding's edge
        f"import pathlib, sys, time\nsys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from fake_nvml import FakeNvml, gpu\n\n"
        "class Hangs(FakeNvml):\n"
        "    def nvmlInit(self):\n"
        f"        if pathlib.Path({str(answered)!r}).exists():\n"
        f"            pathlib.Path({str(entered)!r}).touch()\n"
        "            time.sleep(120)\n"
        f"        pathlib.Path({str(answered)!r}).touch()\n\n"
        "sys.modules[__name__] = Hangs([gpu()])\n")
    name = f"wamf-nvml-{os.getpid()}"
    start(name, state_home, f"{repo}", env=f"WAMF_TUI_FAKE_NVML={fake}")
    try:
        wait_for(name, "How well do you know ML systems?")
        end = time.monotonic() + 30
        while not entered.exists():  # the GPU detection is inside NVML, never to come back
            assert time.monotonic() < end, "NVML was never called"
            time.sleep(0.05)
        pid = app_pid(name)
        quitting = time.monotonic()
        tmux("send-keys", "-t", name, "C-q")
        while Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text():
            assert time.monotonic() - quitting < 5, "quitting waited for the hung NVML call"
            time.sleep(0.05)
    finally:
        tmux("kill-session", "-t", name)


def test_the_guarantee_question_names_what_is_wrong_here(tmp_path, state_home):
    """In a real terminal, on a repo whose environment has no torch: the question says so, and the
    contract records that the user went on despite it, never that they confirmed."""
    from conftest import make_repo

    root = make_repo(tmp_path / "job", {"train.py": "import torch\nfor s in range(9):\n    loss = model(x)\n"
                                                    "    loss.backward()\n    opt.step()\n"})
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    (root / ".venv" / "bin").mkdir()
    (root / ".venv" / "bin" / "python").symlink_to(sys.executable)
    (site / "numpy-2.1.0.dist-info").mkdir()
    name = f"wamf-honest-{os.getpid()}"
    start(name, state_home, f"{root} --fresh", env="VIRTUAL_ENV= CONDA_PREFIX= CONDA_DEFAULT_ENV=")
    try:
        wait_for(name, "How well do you know ML systems?")
        wait_for_gone(name, "checking…")
        enter_until(name, lambda: "torch is not installed in .venv" in tmux("capture-pane", "-p", "-t", name))
        screen = tmux("capture-pane", "-p", "-t", name)
        assert "Continue anyway" in screen and "Re-scan" in screen
        enter_until(name, (root / "contract.md").exists)
        text = (root / "contract.md").read_text()
        assert "User chose to continue at" in text and "torch is not installed in .venv" in text
        assert "User confirmed" not in text
    finally:
        tmux("kill-session", "-t", name)


def test_two_instances_in_two_panes_never_overwrite_each_others_answers(tmp_path, state_home):
    """The second instance on a repo says who holds it and saves nothing; the first one's answers stay."""
    from wamf_tui import demo_repo

    repo = demo_repo.make_demo(str(tmp_path))
    first, second = f"wamf-a-{os.getpid()}", f"wamf-b-{os.getpid()}"
    start(first, state_home, str(repo))
    try:
        wait_for(first, "How well do you know ML systems?")
        tmux("send-keys", "-t", first, "-l", "first-reader-5521")
        enter_and_wait_for_save(first, state_home)
        assert "first-reader-5521" in saved_text(state_home)
        start(second, state_home, str(repo))
        wait_for(second, "read-only")
        screen = tmux("capture-pane", "-p", "-t", second)
        if "A saved session exists" in screen:
            tmux("send-keys", "-t", second, "2")  # start over: in a read-only instance that loses nothing
        tmux("send-keys", "-t", second, "-l", "second-reader-9034")
        tmux("send-keys", "-t", second, "Enter")
        wait_for(second, "The repository to speed up")
        tmux("send-keys", "-t", second, "C-q")
        wait_for_gone(second, "The repository to speed up")
        assert "first-reader-5521" in saved_text(state_home) and "second-reader" not in saved_text(state_home)
    finally:
        tmux("kill-session", "-t", first)
        tmux("kill-session", "-t", second)


def test_an_answer_the_file_gives_refused_opens_the_app_at_that_question(tmp_path, state_home):
    """Without --yes a refused answer ends nothing: the app opens at its question, the answers before it
    kept, and says why."""
    from wamf_tui import demo_repo

    repo = demo_repo.make_demo(str(tmp_path))
    answers = tmp_path / "a.json"
    answers.write_text('{"reader": "MLSys engineer, could do this myself", "run": "python <script>"}')
    name = f"wamf-refused-{os.getpid()}"
    start(name, state_home, f"{repo} --answers {answers}")
    try:
        screen = wait_for(name, "answers file")
        assert "answer refused" in screen and "◉ 1 Job" in screen and "MLSys" in screen  # the reader kept
        assert "Enter takes it" in screen  # the run question, its proposal ready to take
    finally:
        tmux("kill-session", "-t", name)
