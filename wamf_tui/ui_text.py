"""The closing words, shared by the app and the non-interactive path (no Textual here)."""

from __future__ import annotations

from .model import InitState
from .visible import visible
from .wording import say

CLAUDE = "/who-ate-my-flops:optimize"
CODEX = "$who-ate-my-flops:optimize"


def done_message(state: InitState) -> str:
    return say("done", state.reader_register, path=visible(state.contract_path), claude=CLAUDE, codex=CODEX)


def done_lines(state: InitState) -> list[str]:
    return [done_message(state), f"  Claude Code: {CLAUDE}", f"  Codex:       {CODEX}",
            "  (or who-ate-my-flops:diagnose for one measured fix)"]


KEYS = (
    ("Enter", "accept the proposal, or record what you typed"),
    ("1-9", "pick an option; in a checklist, toggle it (while the answer line is empty)"),
    ("space", "toggle a checklist row (while the answer line is empty)"),
    ("up / down", "move through the options"),
    ("Tab / shift+Tab", "move focus between panes, to scroll them"),
    ("Esc", "back to the first question of this step; again: one step back"),
    ("?", "explain the current question (while the answer line is empty)"),
    ("F1", "this list of keys"),
    ("F2", "show the contract preview in a narrow pane"),
    ("ctrl+t", "switch wording: MLSys engineer / algorithm engineer"),
    ("ctrl+r", "re-run detection (after a commit or stash in another pane)"),
    ("ctrl+p", "command palette: jump to a step, copy, re-scan"),
    ("t", "at the run question and step 4: try the benchmark now (says what runs; a second key starts it)"),
    ("y / n", "step 4: write the contract / go back"),
    ("c / p", "after writing: copy the optimize command / the contract path (OSC 52)"),
    ("ctrl+q", "quit; answers are saved and the next start offers to resume"),
)
