"""The screen's last step: every line the app draws loses its control, bidi and separator characters.

Repo text is escaped (`visible`) on its way into the model and the contract's diff; this catches what
came by another path (a notification naming a file, an exception's text, a job's output) before it
reaches the terminal, where `ESC ] 52` would write the user's clipboard. Each such character is zero
cells wide, so removing it keeps every line's width.
"""

from __future__ import annotations

from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

from ..infra.visible import strip_hidden


class HiddenFilter(LineFilter):
    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        if all(s.text.isprintable() or s.control for s in segments):  # nearly every line
            return segments
        return [s if s.control else Segment(strip_hidden(s.text), s.style) for s in segments]
