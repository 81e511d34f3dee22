"""Step 3: what the optimizer may change, what it must leave alone, and when it should stop."""

from __future__ import annotations

from ..model import ALLOWED_CHANGES, HINTS, InitState, Step
from ..propose import proposals
from ..wording import ALLOWED_NOTES
from .base import Ask, Option, Outcome, Question, Value, put, setter


def _picked(value: Value) -> list[str]:
    return value if isinstance(value, list) else [value]


def _allowed(state: InitState) -> Question:
    chosen = state.allowed_changes if "allowed" in state.answered else list(ALLOWED_CHANGES[:4])
    algo = state.reader_register == "algo"
    return put(state, "allowed", "multi", free_text=False, options=[
        Option(c, c, c in chosen, ALLOWED_NOTES[c] if algo else "") for c in ALLOWED_CHANGES])


def _own_tests(state: InitState) -> Question:
    return put(state, "own_tests", "text", default=state.own_tests or proposals.test_command(state), allow_empty=True)


def _hands_off(state: InitState) -> Question:
    folders = proposals.folders(state)
    pick = ("pick folders (space), " if state.reader_register == "mlsys" else "pick folders with space, or ") \
        if folders else ""  # no folder listed: nothing to pick
    return put(state, "hands_off", "multi", free_text=True, fmt={"pick": pick}, options=[
        Option(f, f, f in state.hands_off.split(", ")) for f in folders])


def _memory_trade(state: InitState) -> Question:
    return put(state, "memory_trade", "text", default=state.memory_trade or "no more than today", allow_empty=True)


def _when_to_stop(state: InitState) -> Question:
    return put(state, "when_to_stop", "text", allow_empty=True,
               default=state.when_to_stop or "-15% step time would do; then hand back")


def _hints(state: InitState) -> Question:
    hints = state.hints if "hints" in state.answered else []
    return put(state, "hints", "multi", free_text=True, options=[Option(h, h, h in hints) for h in HINTS])


def _anything_else(state: InitState) -> Question:
    return put(state, "anything_else", "text", default=state.anything_else, allow_empty=True)


ASKS = (
    Ask("allowed", Step.RULES, _allowed, lambda s, v: (
        s.model_copy(update={"allowed_changes": [c for c in ALLOWED_CHANGES if c in _picked(v)]}), Outcome())),
    Ask("own_tests", Step.RULES, _own_tests, setter("own_tests")),
    Ask("hands_off", Step.RULES, _hands_off,
        lambda s, v: (s.model_copy(update={"hands_off": ", ".join(_picked(v))}), Outcome())),
    Ask("memory_trade", Step.RULES, _memory_trade, setter("memory_trade")),
    Ask("when_to_stop", Step.RULES, _when_to_stop, setter("when_to_stop")),
    Ask("hints", Step.RULES, _hints, lambda s, v: (s.model_copy(update={"hints": _picked(v)}), Outcome())),
    Ask("anything_else", Step.RULES, _anything_else, setter("anything_else")),
)
