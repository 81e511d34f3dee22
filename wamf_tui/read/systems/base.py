"""What every config system answers, behind one protocol: which settings the entry's parser takes,
whether it takes a word the app wants to add, why it refuses one, and how a change is spelled for it.

A system is named by its `Kind`; the human name is the wording layer's (`wording.system_label`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from ...model import Kind

if TYPE_CHECKING:
    from ...model import Analysis

Verdict = Literal["proven", "refused", "unknown"]
# problems (a word its parser refuses: the check fails) and doubts (a word it cannot prove: said, asked)
Refusal = tuple[list[str], list[str]]


def flag_name(word: str) -> str:
    """`--lr=1` and `--save_strategy no` -> `--lr`, `--save_strategy`."""
    return word.split("=")[0].split(" ")[0]


def documented(name: str, given: Sequence[str]) -> Verdict:
    """A flag the job's own documented command gives is proof its parser takes it; otherwise unknown."""
    return "proven" if name in {flag_name(w) for w in given} else "unknown"


class ConfigSystem(Protocol):
    """One config system: the parser an entry's own parse call uses."""

    kind: Kind

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        """Whether the entry's parser takes `word` (as a run line writes it); `given`: the documented command."""

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        """The run line's `args` against the parser of the entry `name`: refused words, unproven ones."""

    def settable(self, a: Analysis, setting: str) -> bool:
        """Whether `setting` (a step control's or flag's name as read) is one the command line can set."""

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        """The words that set `setting` to `value` for this parser (`--x=V`, `x=V`, `KEY V`)."""

    def groups(self, words: Sequence[str]) -> list[list[str]]:
        """A change's words, one group per setting it sets, the setting's word first (`--report_to none`)."""

    def line(self, a: Analysis, args: Sequence[str], added: Sequence[str]) -> list[str]:
        """The command's own `args` with the changes' words `added`, in the order this parser reads them."""

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        """The settings the command's `args` set, by the names `a.flags` holds, as written."""


@runtime_checkable
class Refines(Protocol):
    """A system that sits on another parser (yacs `opts` on argparse, ml_collections on absl): found from the
    entry's own module once the general reading is done, and reads its settings from the files it names."""

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        """Whether the entry's own parse call is this system's."""

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        """Its settings, into `a.flags` (name -> default as written) and `a.step_controls`; whether it found
        them (only then is the entry this system's). `find`: the repo file of a module name; `command`: the
        job's arguments (the config file they name holds settings)."""
