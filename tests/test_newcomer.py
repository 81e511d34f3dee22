"""A new user's first minutes, as the README has them: a fresh clone, `scripts/demo` in tmux at 80x24, Enter
to the optimize command, `c` to copy it; and the demo's first run says what it installs before pip starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest
from terminal import enter_until, tmux, wait_for

pytestmark = [pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
              pytest.mark.usefixtures("tmux_server"), pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent


def fresh_clone(tmp_path: Path) -> Path:
    """The committed project, cloned as a new user gets it (nothing built, no .venv)."""
    clone = tmp_path / "wamf-tui"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    return clone


def venv_on_these_packages(clone: Path) -> None:
    """The clone's .venv as scripts/demo's install leaves it (the clone's package, editable, and the
    `wamf-tui` command), its dependencies (torch included) taken from the test run's environment through a
    .pth file rather than downloaded again. scripts/demo then finds wamf-tui and torch and installs nothing."""
    venv = clone / ".venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([str(venv / "bin/python"), "-c", where], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "a-clone.pth").write_text(f"{clone}\n")  # before the dependencies: the clone's wamf_tui is the one
    (site / "b-test-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    command = venv / "bin" / "wamf-tui"
    command.write_text(f"#!{venv}/bin/python\nimport sys\nfrom wamf_tui.entry import main\nsys.exit(main())\n")
    command.chmod(0o755)


def test_a_new_user_walks_the_demo_at_80x24_and_copies_the_optimize_command(tmp_path, state_home):
    clone = fresh_clone(tmp_path)
    venv_on_these_packages(clone)
    name = f"wamf-newcomer-{os.getpid()}"
    in_tmp = set(Path("/tmp").glob("wamf-demo-*"))
    tmux("set-buffer", "not the command")
    tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", "-c", str(clone),
         f"env -u VIRTUAL_ENV XDG_STATE_HOME={state_home} TERM=xterm-256color scripts/demo; sleep 600")
    tmux("resize-window", "-t", name, "-x", "80", "-y", "24")
    contract = state_home / "wamf-tui" / "demo" / "contract.md"
    try:
        wait_for(name, "How well do you know ML systems?")
        enter_until(name, contract.exists)
        wait_for(name, "/who-ate-my-flops:optimize")
        tmux("send-keys", "-t", name, "c")
        wait_for(name, "Copied into tmux's paste buffer")
    finally:
        tmux("kill-session", "-t", name)
    assert tmux("show-buffer") == "/who-ate-my-flops:optimize"
    text = contract.read_text()
    assert f"source {clone}/.venv/bin/activate" in text, [ln for ln in text.splitlines() if "activate" in ln]
    assert set(Path("/tmp").glob("wamf-demo-*")) <= in_tmp  # the demo's repo is not made in /tmp


def test_the_demos_first_run_says_what_it_installs_before_pip_starts(tmp_path):
    """On a clean checkout the first line comes before the install (the old script sat silent in pip)."""
    clone = fresh_clone(tmp_path)
    name = f"wamf-demo-install-{os.getpid()}"
    tmux("new-session", "-d", "-s", name, "-x", "80", "-y", "24", "-c", str(clone),
         "scripts/demo 2>&1 | tee install.log; sleep 600")
    try:
        wait_for(name, "scripts/demo: installing wamf-tui and PyTorch (torch==2.13.0, CPU)")
        assert not (clone / ".venv" / "bin" / "wamf-tui").exists()  # said before pip got anywhere
        end = time.monotonic() + 120
        while time.monotonic() < end and "Obtaining" not in (clone / "install.log").read_text():
            time.sleep(0.2)
        assert "Obtaining" in (clone / "install.log").read_text()  # pip's own progress is shown, not hidden
    finally:
        tmux("kill-session", "-t", name)
