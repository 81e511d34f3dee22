"""Every step screen at 120x40 and at narrow sizes, in both registers where the wording differs."""

from __future__ import annotations

import pytest
from snapshot_states import app_at
from textual.widgets import Input

from wamf_tui.model import Step

pytestmark = pytest.mark.slow


async def no_blink(pilot) -> None:
    for widget in pilot.app.screen.query(Input):
        widget.cursor_blink = False
    await pilot.pause()


@pytest.mark.parametrize("size", [(120, 40), (60, 30), (40, 12)], ids=["120x40", "60x30", "40x12"])
@pytest.mark.parametrize("step", list(Step), ids=[s.name.lower() for s in Step])
def test_step(snap_compare, step, size):
    assert snap_compare(app_at(step), terminal_size=size, run_before=no_blink)


@pytest.mark.parametrize("step", [Step.CHECKS, Step.RULES], ids=["checks", "rules"])
def test_step_mlsys_register(snap_compare, step):
    assert snap_compare(app_at(step, "mlsys"), terminal_size=(120, 40), run_before=no_blink)


@pytest.mark.parametrize("size", [(120, 40), (60, 30), (40, 12)], ids=["120x40", "60x30", "40x12"])
def test_trial_asks_before_it_runs(snap_compare, size):
    """`t` at step 4: what would run, on which GPUs, with which limit; nothing has started."""

    async def press_t(pilot) -> None:
        await no_blink(pilot)
        await pilot.press("t")
        await pilot.pause()

    assert snap_compare(app_at(Step.CONFIRM), terminal_size=size, run_before=press_t)
