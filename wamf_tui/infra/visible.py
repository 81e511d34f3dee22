"""The one gate for text that comes from the repo or the environment.

Commit subjects, branch names, file names, flags and help texts are written by
whoever the user pulled from. Rich strips only a few control characters, so an
ESC in a commit subject reached the terminal whole: `ESC ] 52` wrote the user's
clipboard, `ESC ] 2` retitled the pane. Every such string passes `visible`
before it reaches the model, and so before any widget, the contract or stdout.

Text that does not pass the model (a contract's diff, an error naming a file, a job's output) is
caught at the last step: the command line writes through `GatedStream`, and the app draws every line
through `strip_hidden` (`ui.app.HiddenFilter`). So nothing of the repo reaches the terminal raw, also
by a path nobody thought of.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Annotated, TextIO, TypeVar

from .records import After, Record

# Format characters that reorder or hide text (bidi overrides and isolates, the Trojan Source set).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_HIDDEN = ("Cc", "Cs", "Zl", "Zp")  # controls (C0, DEL, C1), lone surrogates, line/paragraph separators


def _escape(ch: str) -> str:
    n = ord(ch)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def visible(text: str) -> str:
    """`text` with every control, bidi and separator character written as a visible escape."""
    if text.isprintable():  # the usual case, and fast: no control or separator at all
        return text
    return "".join(
        _escape(ch) if ch in _BIDI or unicodedata.category(ch) in _HIDDEN else ch for ch in text
    )


# What `visible` escapes, as one pattern: C0 and C1 controls and DEL, bidi controls, line and paragraph
# separators, lone surrogates. `_HIDDEN_IN_LINES` spares the line break and the tab of a multi-line text.
_HIDDEN_RE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
                        "\ud800-\udfff]")
_HIDDEN_IN_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
                              "\u2028\u2029\ud800-\udfff]")


def visible_lines(text: str) -> str:
    """`visible`, keeping line breaks and tabs: for a text of several lines (a diff, a job's output)."""
    return _HIDDEN_IN_LINES.sub(lambda m: _escape(m.group()), text)


def strip_hidden(text: str) -> str:
    """`text` without what `visible` escapes. For the screen's last step: each such character is zero
    cells wide, so the line keeps its width."""
    return text if text.isprintable() else _HIDDEN_RE.sub("", text)


class GatedStream:
    """stdout or stderr of the command line: every write passes `visible_lines`. Argparse's errors, a
    job's output in `try`, a message naming a file: no text reaches the terminal raw."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(visible_lines(text))
        return len(text)

    def __getattr__(self, name: str):  # flush, isatty, fileno, encoding: the real stream's
        return getattr(self._stream, name)


# A model field holding text from the repo or the environment: gated on validation.
RepoText = Annotated[str, After(visible)]
M = TypeVar("M", bound=Record)


def gated(model: M) -> M:
    """`model` validated anew, so every `RepoText` in it passes `visible`: detectors fill their facts
    field by field after construction, which is not checked."""
    return type(model).model_validate(model.model_dump())
