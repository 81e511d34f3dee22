"""Helpers shared by the test files: a filled state, and waits for the app (bounded, on a condition)."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from wamf_tui.model import ALLOWED_CHANGES, Checkpoint, InitState
from wamf_tui.ui.app import WamfApp
from wamf_tui.ui.screens import ConfirmScreen


def full_state() -> InitState:
    return InitState(
        reader="algorithm engineer, new to systems",
        repo="/home/u/job (main @ abc1234)",
        activate="source .venv/bin/activate",
        run="python train.py --steps 30",
        node="gpu01, 8x H100 80G, all free when checked",
        checks=[Checkpoint(name="loss", where="train.py:42", what="loss", steps="1-30", tolerance="rtol 1e-5")],
        recorder="parity",
        allowed_changes=list(ALLOWED_CHANGES[:2]),
    )


async def settle(pilot, app: WamfApp, timeout: float = 60) -> None:
    """Wait until detection and the script's reading have reported (bounded: a hang fails here)."""
    await pilot.pause()
    for _ in range(int(timeout / 0.05)):
        if not app.talk.pending:
            break
        await pilot.pause(0.05)
    else:
        raise AssertionError(f"still waiting for {app.talk.pending} after {timeout} s")
    await pilot.pause()


async def until(pilot, condition: Callable[[], object], what: str, timeout: float = 10) -> None:
    """Wait for `condition` (bounded: it failing to come true fails the test, with `what`)."""
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")


async def enter_until_done(pilot, app: WamfApp, limit: int = 40) -> None:
    for _ in range(limit):
        screen = app.screen
        if isinstance(screen, ConfirmScreen) and app.state.at == "done":
            return
        await pilot.press("enter")
        await pilot.pause()
    raise AssertionError(f"not done after {limit} Enters; at step {app.state.step} at {app.state.at!r}")


def env_with(folder: Path, package: str) -> str:
    """The activate line of a new virtual environment in `folder` with `package` from the package index, which
    also sees this environment's packages (its real torch); the test is skipped where the index lacks it."""
    venv = folder / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    got = subprocess.run([str(python), "-m", "pip", "install", "-q", package], capture_output=True, text=True,
                         timeout=600)
    if got.returncode:
        pytest.skip(f"{package} could not be installed from this machine's package index: {got.stderr[-300:]}")
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return f"export PATH={venv / 'bin'}:$PATH"
