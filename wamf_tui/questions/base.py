"""What a question is, and what its answer does: the types every step's declarations are made of.

A declaration (`Ask`) says everything one question needs: its key (also its wording key and its place
in `InitState.at`), its step, when it is asked, how it is put from the state (with its proposal), and
the state its answer makes. The flow walks the declarations; nothing else knows a question's key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from ..model import InitState, Step
from ..wording import explain, say

Kind = Literal["choice", "text", "multi"]
Action = Literal["next", "stay", "write", "overwrite", "exclude", "first", "back", "recheck", "analyze"]


@dataclass
class Option:
    label: str
    value: str
    checked: bool = False
    note: str = ""


@dataclass
class Question:
    key: str
    kind: Kind
    prompt: str
    help: str
    options: list[Option] = field(default_factory=list)
    default: str = ""  # pre-filled text (text questions), or the option picked by Enter (choice)
    free_text: bool = True  # choice / multi questions also take a typed answer
    allow_empty: bool = False
    filterable: bool = False  # a long list: a word typed on the answer line filters it


@dataclass
class Outcome:
    """What an answer leads to: an error (the question stays), or the next move. `said` is a line for
    the user that is not an error (an answer taken that changes nothing on screen)."""

    error: str | None = None
    action: Action = "next"
    said: str = ""


Value = str | list[str]
Build = Callable[[InitState], Question]
Apply = Callable[[InitState, Value], "tuple[InitState, Outcome]"]


def always(state: InitState) -> bool:
    return True


def read(state: InitState) -> bool:
    """The script's reading is not on its way: the questions that depend on it can be asked."""
    return not state.reading


def keep(state: InitState, value: Value) -> tuple[InitState, Outcome]:
    return state, Outcome()


@dataclass(frozen=True)
class Ask:
    """One question, declared once. `apply` gets the answer checked for placeholders, empties and TBD
    (a list for a multi question) and returns the next state with the outcome. `remembered` False: a
    step-4 phase, not an answer of the contract (it never joins `answered`)."""

    key: str
    step: Step
    build: Build
    apply: Apply = keep
    when: Callable[[InitState], bool] = always
    words: tuple[str, ...] = ()  # wording keys besides `key` (option labels, refusals)
    remembered: bool = True
    waits: bool = False  # a question that only says what is on its way: an answer does nothing


def put(state: InitState, key: str, kind: Kind, **kw: object) -> Question:
    """A question worded in the reader's register (`fmt` fills the wording's fields)."""
    fmt = kw.pop("fmt", {})
    r = state.reader_register
    return Question(key, kind, say(key, r, **fmt), explain(key, r), **kw)  # type: ignore[arg-type]


def opt(state: InitState, key: str, value: str) -> Option:
    return Option(say(key, state.reader_register), value)


def setter(field_name: str) -> Apply:
    """The answer is kept as typed in `field_name`."""
    def apply(state: InitState, value: Value) -> tuple[InitState, Outcome]:
        return state.model_copy(update={field_name: value}), Outcome()
    return apply
