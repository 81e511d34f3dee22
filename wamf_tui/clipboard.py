"""OSC 52: the terminal's own clipboard, which works over SSH. Inside tmux the
sequence must be wrapped in a DCS passthrough, or tmux swallows it."""

from __future__ import annotations

import base64
from collections.abc import Mapping


def osc52(text: str, environ: Mapping[str, str]) -> str:
    seq = f"\x1b]52;c;{base64.b64encode(text.encode()).decode()}\x07"
    if environ.get("TMUX"):
        return "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return seq
