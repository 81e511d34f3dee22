"""Every step screen at 120x40 and at narrow sizes, in both registers where the wording differs, on a
job whose script was read (the demo's)."""

from __future__ import annotations

import pytest
from helpers import until
from snapshot_states import (
    app_at,
    assert_highlight_in_view,
    assert_message_in_view,
    highlight_in_view,
    message_in_view,
    to_the_last,
)
from textual.widgets import Input

from wamf_tui.contract.render import WriteResult
from wamf_tui.model import Step
from wamf_tui.ui.messages import ContractWritten
from wamf_tui.ui.screens import ConfirmScreen

pytestmark = pytest.mark.slow


async def no_blink(pilot) -> None:
    for widget in pilot.app.screen.query(Input):
        widget.cursor_blink = False
    await pilot.pause()


SIZES = [(120, 40), (80, 24), (60, 30), (40, 12)]
SIZE_IDS = ["120x40", "80x24", "60x30", "40x12"]
LISTS = {Step.READER: "", Step.JOB: "changes", Step.CHECKS: "", Step.RULES: "", Step.CONFIRM: ""}  # a list each


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
@pytest.mark.parametrize("step", list(Step), ids=[s.name.lower() for s in Step])
def test_step(snap_compare, step, size):
    assert snap_compare(app_at(step), terminal_size=size, run_before=no_blink)


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
def test_benchmark_table(snap_compare, size):
    """The script read: what the benchmark version changes, each row with its reason."""
    assert snap_compare(app_at(Step.JOB, at="changes"), terminal_size=size, run_before=no_blink)


@pytest.mark.parametrize("size", [(80, 24), (40, 12)], ids=["80x24", "40x12"])
@pytest.mark.parametrize("step", list(Step), ids=[s.name.lower() for s in Step])
def test_list_scrolled_to_its_end(snap_compare, step, size):
    """Down to the list's last option: the list has scrolled, and the highlighted option is in view."""

    async def to_the_end(pilot) -> None:
        await no_blink(pilot)
        await pilot.press(*["down"] * to_the_last(pilot.app.screen))
        await until(pilot, lambda: highlight_in_view(pilot.app.screen), "the last option scrolled into view")
        assert_highlight_in_view(pilot.app.screen)

    assert snap_compare(app_at(step, at=LISTS[step]), terminal_size=size, run_before=to_the_end)


@pytest.mark.parametrize("size", [(80, 24), (40, 12)], ids=["80x24", "40x12"])
@pytest.mark.parametrize("step", list(Step), ids=[s.name.lower() for s in Step])
def test_help_open(snap_compare, step, size):
    """`?` on each step: the explanation is on screen, inside the question area, never a blank pane."""

    async def explain(pilot) -> None:
        await no_blink(pilot)
        await pilot.press("question_mark")
        # on a loaded machine the scroll to the message can take more than one frame
        await until(pilot, lambda: message_in_view(pilot.app.screen), "the explanation scrolled into view")
        assert_message_in_view(pilot.app.screen)

    assert snap_compare(app_at(step, at=LISTS[step]), terminal_size=size, run_before=explain)


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


OUTCOMES = {  # what the writing thread posts back, without the disk
    "done": WriteResult(written=True),
    "overwrite": WriteResult(diff="--- contract.md (on disk)\n+++ contract.md (new)\n-steps: 20\n+steps: 30\n"),
    "path": WriteResult(error="Permission denied"),
}


@pytest.mark.parametrize("size", [(120, 40), (40, 12)], ids=["120x40", "40x12"])
@pytest.mark.parametrize("phase", list(OUTCOMES))
def test_step_4_after_the_write(snap_compare, phase, size):
    """Step 4's phases once the write is answered: written (and the exclude offer), a different contract
    on disk (the difference, and overwrite or another path), or a path that cannot be written."""

    async def written(pilot) -> None:
        await no_blink(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, ConfirmScreen)
        app = pilot.app
        app.state = app.state.model_copy(update={"at": "writing"})  # as `write` leaves it for the thread
        app.post_message(ContractWritten(OUTCOMES[phase], app.talk.contract(), None))
        await pilot.pause()
        assert app.state.at == phase
        await no_blink(pilot)

    assert snap_compare(app_at(Step.CONFIRM), terminal_size=size, run_before=written)
