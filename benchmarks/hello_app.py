"""The reference for first paint and input latency: a hello-world Textual app with one Input.

`--with-wamf-imports` first imports what the real app imports, to split wamf-tui's first
paint into the cost of its imports and the cost of its own start.
"""

import sys

if "--with-wamf-imports" in sys.argv:
    import wamf_tui.cli
    import wamf_tui.ui.start  # noqa: F401

from textual.app import App
from textual.widgets import Input, Static


class Hello(App):
    def compose(self):
        yield Static("How well do you know ML systems?")
        yield Input(id="answer")


if __name__ == "__main__":
    Hello().run()
