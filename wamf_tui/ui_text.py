"""The closing words, shared by the app and the non-interactive path (no Textual here)."""

from __future__ import annotations

from .model import InitState
from .wording import say

CLAUDE = "/who-ate-my-flops:optimize"
CODEX = "$who-ate-my-flops:optimize"


def done_message(state: InitState) -> str:
    return say("done", state.reader_register, path=state.contract_path, claude=CLAUDE, codex=CODEX)


def done_lines(state: InitState) -> list[str]:
    return [done_message(state), f"  Claude Code: {CLAUDE}", f"  Codex:       {CODEX}",
            "  (or who-ate-my-flops:diagnose for one measured fix)"]
