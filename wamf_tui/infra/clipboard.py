"""Copy a line over SSH. Inside tmux, tmux's own paste buffer: `load-buffer -w` also passes it to the
terminal's clipboard when tmux's `set-clipboard` is on, while a wrapped OSC 52 is dropped by tmux 3.3 and
later unless `allow-passthrough` is on. Outside tmux, OSC 52 is the terminal's own clipboard."""

from __future__ import annotations

import base64
import shutil
import subprocess
from collections.abc import Mapping
from enum import Enum


class Way(Enum):
    """How the text was copied, said on screen: the user knows where to paste it from."""

    TMUX = "tmux"  # tmux's paste buffer (and the terminal's clipboard if set-clipboard is on)
    TMUX_OSC52 = "tmux-osc52"  # load-buffer failed: OSC 52 wrapped in tmux's passthrough
    OSC52 = "osc52"


def osc52(text: str, environ: Mapping[str, str]) -> str:
    seq = f"\x1b]52;c;{base64.b64encode(text.encode()).decode()}\x07"
    if environ.get("TMUX"):
        return "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return seq


def tmux_load(text: str, environ: Mapping[str, str]) -> bool:
    """Put `text` in the tmux server's paste buffer (the one `$TMUX` names); False when that fails."""
    tmux = shutil.which("tmux", path=environ.get("PATH"))
    if not environ.get("TMUX") or tmux is None:
        return False
    try:
        done = subprocess.run([tmux, "load-buffer", "-w", "-"], input=text.encode(), env=dict(environ),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=3)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def copy(text: str, environ: Mapping[str, str]) -> tuple[Way, str]:
    """The way to copy and what is left to write to the terminal (empty when tmux took it)."""
    if tmux_load(text, environ):
        return Way.TMUX, ""
    return (Way.TMUX_OSC52 if environ.get("TMUX") else Way.OSC52), osc52(text, environ)
