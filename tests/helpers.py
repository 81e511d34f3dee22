"""Helpers shared by the test files: a filled state, and waits for the app (bounded, on a condition)."""

from __future__ import annotations

from collections.abc import Callable

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
