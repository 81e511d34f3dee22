"""How a feature the job guards with one of its own settings is switched off from the command line (its
`off_switch`): leaving a store_true flag out, a Hydra override, a `--name value` pair, a value its help names,
or an interval set past any benchmark run. Read wherever a feature's reach is judged, proposed in the run line."""

from __future__ import annotations

import re

from ..model import GIVEN
from .hydra_overrides import ENV, is_override

NEVER = 10**9  # an interval no benchmark run reaches
_INTERVAL = re.compile(r"every|interval|freq|period|(checkpointing|validation|logging|save|eval|evaluation)[-_]steps$",
                       re.I)  # `--checkpointing_steps`: steps between saves, never a step count


def switch_off(flag: str | None, defaults: dict[str, str | None],
                off_values: dict[str, str] | None = None) -> tuple[str, list[str], list[str]] | None:
    """(how, flags, env) that switch a guarded feature off through its own flag or variable.

    A store_true flag is switched off by leaving it out: `how` then starts with the flag and says so."""
    if not flag:
        return None
    if ENV.match(flag):  # `WANDB_MODE=disabled`
        return flag, [], [flag]
    if flag.endswith(f" {GIVEN}"):  # `if not args.no_wandb:`: the store_true flag given turns it off
        name = flag.removesuffix(f" {GIVEN}")
        return f"{name} given", [name], []
    if all(is_override(w) and ("=" in w or w.startswith("~")) and not w.endswith("=...")  # Hydra: `test=false`;
           for w in flag.split(" ")):  # `logger=...` is a placeholder for a value, never a switch
        return flag, flag.split(" "), []
    if flag.startswith("--") and " " in flag:  # HF style: "--save_strategy no"
        return flag, flag.split(), []
    if flag.startswith("--") and "=" in flag and not flag.endswith("=..."):  # a table's: "--trainer.logger=false"
        return flag, [flag], []
    name = flag.split("=")[0]
    if not name.startswith("-"):
        return None
    if flag.endswith("=...") and defaults.get(name.lstrip("-")) in ("True", "False"):
        # an exec-style configurator's boolean global: a config file the command names may turn it on
        # (nanoGPT's config/train_gpt2.py sets wandb_log = True), and only a later `--name=False` undoes it
        return f"{name}=False", [f"{name}=False"], []
    if defaults.get(name) == "False":
        return f"{name} left off (default False)", [], []
    if name in (off_values or {}):  # its own help says which value switches it off
        value = (off_values or {})[name]
        return f"{name}={value} (its help: {value} switches it off)", [f"{name}={value}"], []
    if _INTERVAL.search(name):
        return f"{name}={NEVER}", [f"{name}={NEVER}"], []
    return None
