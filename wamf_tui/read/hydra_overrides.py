"""A Hydra app's command-line words against its composed config, by Hydra's own rules: pure, over the
`HydraTree` that `read/hydra_config` composes (`key=` for a key the config has, `+key=` for one it
lacks, `group=option` for an option the group has, `~key` for what is there)."""

from __future__ import annotations

import re

from ..model import HydraTree

ENV = re.compile(r"^[A-Z][A-Z0-9_]*=")  # `WANDB_MODE=disabled`: a variable, never an override


def key_of(override: str) -> str:
    """The config key an override names: `+trainer.max_steps=30` -> `trainer.max_steps`."""
    return override.lstrip("+~").split("=")[0].split("@")[0]


def is_override(word: str) -> bool:
    """`key=value`, `+key=value`, `~key`: a Hydra override, not a flag or an environment variable."""
    return not ENV.match(word) and bool(re.match(r"^(~[A-Za-z_][\w./@-]*(=|$)|\+{0,2}[A-Za-z_][\w./@-]*=)", word))


def known(tree: HydraTree, key: str) -> bool:
    return key in tree.keys or key in tree.nodes or key in tree.groups


# Hydra's own command-line flags: those that print and exit, or sweep, run no single training job
_SHOWS = {"--cfg", "-c", "--help", "-h", "--hydra-help", "--info", "-i", "--version", "--shell-completion", "-sc",
          "--resolve", "--package", "-p"}
_SWEEPS = {"--multirun", "-m"}
_OTHER_CONFIG = {"--config-name", "-cn", "--config-path", "-cp", "--config-dir", "-cd"}
_VALUED = _OTHER_CONFIG | {"--cfg", "-c", "--package", "-p"}  # the next word is the flag's value


def hydra_overrides(args: list[str], tree: HydraTree | None, name: str) -> tuple[list[str], list[str]]:
    """(problems, warnings) of a Hydra app's command-line words against its composed config, by Hydra's
    own rules: `key=` only for a key the config has, `+key=` only for one it lacks, `group=option` only
    for an option the group has, `~key` only for what is there."""
    problems: list[str] = []
    flags = [w.split("=")[0] for w in args if w.startswith("-")]
    problems += [f"{f} makes {name} print its config or help and exit" for f in flags if f in _SHOWS]
    problems += [f"{f} makes {name} sweep several runs, not one" for f in flags if f in _SWEEPS]
    problems += [f"{f} is not a Hydra flag" for f in flags if f not in _SHOWS | _SWEEPS | _OTHER_CONFIG]
    words = [w for i, w in enumerate(args) if not w.startswith("-") and not (i and args[i - 1] in _VALUED)]
    problems += [f"{w} is not a Hydra override (key=value)" for w in words if not is_override(w)]
    words = [w for w in words if is_override(w)]
    if not words:
        return problems, []
    if tree is None or not tree.composed:
        why = tree.note if tree is not None else "its config was not found"
        return problems, [f"{name}'s Hydra overrides were not checked ({why})"]
    if any(f in _OTHER_CONFIG for f in flags):
        return problems, [f"the run line picks another config than {tree.config}: its overrides were not checked"]
    for w in words:
        problems += _override(w, tree)
    return problems, []


def _override(word: str, tree: HydraTree) -> list[str]:
    key, value = key_of(word), word.split("=", 1)[1] if "=" in word else None
    where = f"the composed config ({tree.config})"
    if word.startswith("++") or key.startswith(("hydra.", "hydra/")) or key == "hydra":
        return []  # `++` adds or sets; Hydra checks its own settings itself
    if word.startswith("~"):
        return [] if known(tree, key) or key in tree.choices else [f"{word}: {key} is not in {where}"]
    if key in tree.groups:
        if word.startswith("+") and key in tree.choices:
            return [f"{word}: {key} is already in the defaults list; use {word[1:]}"]
        if not word.startswith("+") and key not in tree.choices:
            return [f"{word}: config group {key} is not in the defaults list; add it with +{word}"]
        option = (value or "").removesuffix(".yaml")
        if option == "null":
            return [f"{word}: Hydra takes no null here; drop the group with ~{key}"]
        if option.startswith("["):
            return []
        sub, _, leaf = option.rpartition("/")  # `experiment=owt/gpt2s-flash`: an option of a folder inside it
        if option not in tree.groups[key] and not (sub and leaf in tree.groups.get(f"{key}/{sub}", [])):
            return [f"{word}: {option} is not an option of config group {key} ({', '.join(tree.groups[key][:8])})"]
        return []
    if word.startswith("+"):
        return [f"{word}: {key} is already in {where}; use {word[1:]}"] if known(tree, key) else []
    return [] if known(tree, key) else [f"{word}: {key} is not in {where}; add it with +{word}"]
