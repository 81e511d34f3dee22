"""Whether the entry's own parser takes a flag: the question every flag the app adds must answer yes to.

A flag is proven when the parser the entry calls is read whole and has it; refused when that parser is
read whole and lacks it (fire over a function raises on an argument it cannot consume; argparse exits 2);
unknown where the reading cannot see all of the parser (a table of a library that changes by version, a
parser that passes unknown flags on, a system not modelled). The app adds only proven flags.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import Analysis
from .systems.base import Verdict, flag_name
from .systems.registry import system

__all__ = ["Verdict", "accepts", "flag_name"]


def accepts(a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
    """Whether the job's parser takes the flag `word` (as a run line writes it). `given`: the job's documented
    command, whose own flags are proof the parser takes them where the reading cannot see it whole."""
    return system(a).accepts(a, word, given)
