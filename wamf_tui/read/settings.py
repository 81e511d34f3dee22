"""Whether the entry's own parser takes a flag: the question every flag the app adds must answer yes to.

A flag is proven when the parser the entry calls is read whole and has it; refused when that parser is
read whole and lacks it (fire over a function raises on an argument it cannot consume; argparse exits 2);
unknown where the reading cannot see all of the parser (a table of a library that changes by version, a
parser that passes unknown flags on, a system not modelled). The app adds only proven flags.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from ..model import Analysis
from .hydra_overrides import hydra_overrides

Verdict = Literal["proven", "refused", "unknown"]
# Systems whose every flag the reading sees: the function's parameters, the options declared.
WHOLE = ("fire", "jsonargparse CLI", "typer", "click", "absl")


def flag_name(word: str) -> str:
    """`--lr=1` and `--save_strategy no` -> `--lr`, `--save_strategy`."""
    return word.split("=")[0].split(" ")[0]


def accepts(a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
    """Whether the job's parser takes the flag `word` (as a run line writes it). `given`: the job's documented
    command, whose own flags are proof the parser takes them where the reading cannot see it whole."""
    system = a.config_system
    if system == "hydra" and not word.startswith("-"):
        if a.hydra is None or not a.hydra.composed:
            return "unknown"
        return "refused" if hydra_overrides([word], a.hydra, a.script)[0] else "proven"
    if not word.startswith("-"):
        return "unknown"  # a positional
    name = flag_name(word)
    if name in a.modelled:
        return "proven"
    if system == "configurator":
        return "proven" if name[2:] in a.module_globals or name[2:] in a.flags else "refused"
    if not a.flags:
        return "proven" if name in {flag_name(w) for w in given} else "unknown"
    if system == "argparse":
        options = [f for f in a.flags if f.startswith("-")]
        if name in options or len([o for o in options if o.startswith(name)]) == 1:
            return "proven"
        if a.parser_open:  # parse_known_args, parents, computed names: another may take it, or none
            return "proven" if name in {flag_name(w) for w in given} else "unknown"
        return "refused"
    if system in WHOLE:
        known = {f.replace("-", "_") for f in a.flags}
        bare = name.replace("-", "_")
        negations = ("__no_", "__no") if system in ("click", "absl") else ()
        if bare in known or any(bare.startswith(n) and "__" + bare[len(n):] in known for n in negations):
            return "proven"
        # `fire.Fire(main)` over `main(**kwargs)`: an unknown name is taken, and maybe ignored
        if a.parser_open:
            return "proven" if name in {flag_name(w) for w in given} else "unknown"
        return "refused"
    if system.startswith("HfArgumentParser"):  # its TrainingArguments table may lag the library
        return "proven" if name in a.flags or name in {flag_name(w) for w in given} else "unknown"
    return "proven" if name in a.flags or name in {flag_name(w) for w in given} else "unknown"
