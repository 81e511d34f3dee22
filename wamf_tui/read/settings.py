"""Whether the entry's own parser takes a flag: the question every flag the app adds must answer yes to.

A flag is proven when the parser the entry calls is read whole and has it; refused when that parser is
read whole and lacks it (fire over a function raises on an argument it cannot consume; argparse exits 2);
unknown where the reading cannot see all of the parser (a table of a library that changes by version, a
parser that passes unknown flags on, a system not modelled). The app adds only proven flags.
"""

from __future__ import annotations

from typing import Literal

from ..model import Analysis

Verdict = Literal["proven", "refused", "unknown"]
# Systems whose every flag the reading sees: the function's parameters, the options declared.
WHOLE = ("fire", "jsonargparse CLI", "typer", "click", "absl")


def flag_name(word: str) -> str:
    """`--lr=1` and `--save_strategy no` -> `--lr`, `--save_strategy`."""
    return word.split("=")[0].split(" ")[0]


def accepts(a: Analysis, word: str) -> Verdict:
    """Whether the job's parser takes the flag `word` (as a run line writes it)."""
    if not word.startswith("-"):
        return "unknown"  # a Hydra override or a positional: the composition says (hydra_config)
    name = flag_name(word)
    system = a.config_system
    if system == "configurator":
        return "proven" if name[2:] in a.module_globals or name[2:] in a.flags else "refused"
    if not a.flags:
        return "unknown"
    if system == "argparse":
        if a.parser_open:
            return "unknown"
        options = [f for f in a.flags if f.startswith("-")]
        return "proven" if name in options or len([o for o in options if o.startswith(name)]) == 1 else "refused"
    if system in WHOLE:
        known = {f.replace("-", "_") for f in a.flags}
        bare = name.replace("-", "_")
        negations = ("__no_", "__no") if system in ("click", "absl") else ()
        if bare in known or any(bare.startswith(n) and "__" + bare[len(n):] in known for n in negations):
            return "proven"
        # `fire.Fire(main)` over `main(**kwargs)`: an unknown name is taken, and maybe ignored
        return "unknown" if a.parser_open else "refused"
    if system.startswith("HfArgumentParser"):
        return "proven" if name in a.flags else "unknown"  # its TrainingArguments table may lag the library
    return "unknown"
