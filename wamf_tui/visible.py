"""The one gate for text that comes from the repo or the environment.

Commit subjects, branch names, file names, flags and help texts are written by
whoever the user pulled from. Rich strips only a few control characters, so an
ESC in a commit subject reached the terminal whole: `ESC ] 52` wrote the user's
clipboard, `ESC ] 2` retitled the pane. Every such string passes `visible`
before it reaches the model, and so before any widget, the contract or stdout.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, TypeVar

from pydantic import AfterValidator, BaseModel

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


# A model field holding text from the repo or the environment: gated on validation.
RepoText = Annotated[str, AfterValidator(visible)]
M = TypeVar("M", bound=BaseModel)


def gated(model: M) -> M:
    """`model` validated anew, so every `RepoText` in it passes `visible`: detectors fill their facts
    field by field after construction, which pydantic does not validate."""
    return type(model).model_validate(model.model_dump())
