"""The two dialogs over a step screen: every key (F1), and the offer to resume a saved session."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option as ListOption

from .. import wording
from ..model import STEP_TITLES, InitState


class KeysScreen(ModalScreen[None]):
    """Every key, in one place (F1)."""

    BINDINGS = [Binding("escape,f1,q", "dismiss", "close")]

    def compose(self) -> ComposeResult:
        table = Table.grid(padding=(0, 2))
        table.add_column(style="bold", no_wrap=True)
        table.add_column()
        for key, what in wording.KEYS:
            table.add_row(key, what)
        yield Static(table, id="keys")

    def on_mount(self) -> None:
        self.query_one("#keys").border_title = "keys · Esc closes"


class ResumeScreen(ModalScreen[bool]):
    """Offer to pick up a saved session where it stopped."""

    BINDINGS = [Binding("escape", "dismiss(True)", "resume")]

    def __init__(self, saved: InitState) -> None:
        super().__init__()
        self.saved = saved

    def compose(self):
        step = f"step {int(self.saved.step)} {STEP_TITLES[self.saved.step]}"
        yield OptionList(
            ListOption(f"1 Resume at {step} with your {len(self.saved.answered)} answers", id="resume"),
            ListOption("2 Start over", id="fresh"),
            id="resume-list",
        )

    def on_mount(self) -> None:
        self.query_one(OptionList).border_title = "A saved session exists for this repo"

    def on_key(self, event) -> None:
        if event.key in ("1", "2"):
            event.stop()
            self.dismiss(event.key == "1")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id == "resume")
