"""Step 0: who reads the app's words (it picks the register every later question is worded in)."""

from __future__ import annotations

from ..model import InitState, Step
from ..wording import READER_OPTIONS, register_for
from .base import Ask, Option, Outcome, Question, Value, put


def _reader(state: InitState) -> Question:
    opts = [Option(t, t) for t in READER_OPTIONS]
    return put(state, "reader", "choice", options=opts, default=state.reader or READER_OPTIONS[1])


def _take_reader(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    text = str(value)
    return state.model_copy(update={"reader": text, "reader_register": register_for(text)}), Outcome()


ASKS = (Ask("reader", Step.READER, _reader, _take_reader),)
