"""What the job's own YAML config file leaves off: `elif cfg.hub_model_id: trainer.push_to_hub()` never
runs when the file the command names does not set `hub_model_id`.

Only a file the command names (`axolotl train examples/lora.yml`, `--config-file x.yaml`) counts: the run
line keeps it, so the benchmark reads the same file. It is parsed with `yaml.safe_load`, which builds plain
data and runs nothing. Only a condition that needs the key (a conjunct of an `and` chain, or `is not None`)
on a config object (`cfg.x`, `self.config.a.b`) is read, and only where the file holds the key's parent.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from pathlib import Path

from ..infra.files import read_regular
from ..model import Fact, Required

LIMIT = 1 << 20  # a config file, not a data file
BASES = ("cfg", "config", "conf", "self.cfg", "self.config", "self.conf")


def named_files(root: Path, here: Path, command: Sequence[str]) -> list[tuple[str, dict]]:
    """(its path in the repo, its mapping) for each YAML file in the repo the command names that reads as one
    (relative to the repo's root, else to the script's folder)."""
    values = [word.partition("=")[2] if word.startswith("-") else word for word in command]
    return [(name, data) for name, path in in_repo(root, here, values, (".yml", ".yaml"))
            if isinstance(data := _load(path), dict)]


# a config value left for the reader to fill: `$replace_this_with_...`, `/path/to/data`, `<path to your data>`,
# `CHANGE_ME`; never a token such as `<pad>` or `<|endoftext|>`. OmegaConf's `???` is its config system's to say.
PLACEHOLDER = re.compile(r"replace[_ ]?(this|me)|^/?path/to/|<[^<>|]*\b(path|dir|directory|folder|your)\b[^<>|]*>"
                         r"|\b(CHANGE_?ME|FILL_?ME|FILL_?IN|TODO)\b", re.I)


def placeholders(files: list[tuple[str, dict]]) -> list[Required]:
    """Each config file the command names that leaves values to fill (I-JEPA's `root_path:
    $replace_this_with_absolute_path_to_your_datasets_directory`): the job cannot start on it as it is, so it
    is a required input, named by the file and its keys, given by a filled config of the user's own."""
    found = []
    for name, data in files:
        keys = [key for key, value in _leaves(data, "") if isinstance(value, str) and PLACEHOLDER.search(value)]
        if keys:
            found.append(Required(name=", ".join(keys[:4]), kind="template", file=name, line=1))
    return found


def _leaves(data: object, at: str) -> list[tuple[str, object]]:
    if isinstance(data, dict):
        return [leaf for k, v in data.items() for leaf in _leaves(v, f"{at}.{k}" if at else str(k))]
    if isinstance(data, list):
        return [leaf for i, v in enumerate(data) for leaf in _leaves(v, f"{at}[{i}]")]
    return [(at, data)]


def in_repo(root: Path, here: Path, values: Sequence[str], suffixes: tuple[str, ...]) -> list[tuple[str, Path]]:
    """(its path in the repo, the file) for each value naming a file with one of `suffixes` inside the repo,
    relative to the repo's root, else to the script's folder; each named once."""
    found = []
    top = root.resolve()
    for value in dict.fromkeys(v for v in values if v.endswith(suffixes)):
        for base in (root, here):
            path = (base / value).resolve()
            if path.is_file() and path.is_relative_to(top):
                found.append((path.relative_to(top).as_posix(), path))
                break
    return found


def _load(path: Path) -> object:
    import yaml  # only when a command names a YAML file

    try:
        return load_yaml(read_regular(path, LIMIT).decode("utf-8", "replace"))
    except (OSError, yaml.YAMLError, RecursionError):
        return None


MAX_NODES = 100_000  # a config's values with its aliases spelled out: far more than any real config


def load_yaml(text: str) -> object:
    """`yaml.safe_load`, refusing (yaml.YAMLError) a document whose aliases expand to more than MAX_NODES
    values, or refer to themselves: a 1 KB "billion laughs" file builds shared data in no time, but every
    walk over it (the DeepSpeed pointers, the needed keys) then took forever."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded(node) > MAX_NODES:
            raise yaml.YAMLError(f"its aliases expand past {MAX_NODES} values")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _expanded(root) -> int:
    """How many nodes the YAML graph at `root` has with every alias spelled out (MAX_NODES + 1 for one
    that refers to itself). Each node is counted once and its size remembered: linear in the graph."""
    import yaml

    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_: set[int] = set()
    while stack:
        node, done = stack.pop()
        kids = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else \
            list(node.value) if isinstance(node, yaml.SequenceNode) else []
        if done:
            open_.discard(id(node))
            size[id(node)] = min(MAX_NODES + 1, 1 + sum(size[id(k)] for k in kids))
            continue
        if id(node) in size:
            continue
        if id(node) in open_:  # an alias to a node still being read: it refers to itself
            return MAX_NODES + 1
        open_.add(id(node))
        stack.append((node, True))
        stack += [(k, False) for k in kids if id(k) not in size]
    return size[id(root)]


def _needed(guard: str) -> list[list[str]]:
    """The key paths a guard needs set: `cfg.a and x` -> [["a"]]; `self.config.b.c is not None` -> [["b", "c"]]."""
    try:
        test = ast.parse(guard, mode="eval").body
    except SyntaxError:  # a guard cut short in the reading: nothing is claimed
        return []
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    paths = []
    for part in parts:
        if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.IsNot) \
                and isinstance(part.comparators[0], ast.Constant) and part.comparators[0].value is None:
            part = part.left
        chain: list[str] = []
        while isinstance(part, ast.Attribute):
            chain.insert(0, part.attr)
            part = part.value
            dotted = ast.unparse(part)
            if dotted in BASES and chain:
                paths.append(chain)
                break
    return paths


def leaves_off(fact: Fact, files: list[tuple[str, dict]], defaults: dict[str, object]) -> str | None:
    """Why the command's config file leaves `fact` off ("hub_model_id is not set in x.yml"), else None.
    A key the file leaves out takes the default a config class of the code gives it (`save_final_state:
    bool = True` keeps it on); with no such field, it reads as unset."""
    if not fact.guard or not files:
        return None
    for path in _needed(fact.guard):
        for name, data in files:
            node: object = data
            for key in path[:-1]:
                node = node.get(key) if isinstance(node, dict) else None
            if not isinstance(node, dict):
                continue  # the file does not hold this part of the config: nothing known
            key = ".".join(path)
            if path[-1] not in node:
                default = defaults.get(path[-1])
                if default in (None, False, 0, ""):
                    return f"{key} is not set in {name}" + (f" (default {default!r})" if path[-1] in defaults else "")
                continue
            if node[path[-1]] in (None, False, 0, "", [], {}):
                return f"{key} is {node[path[-1]]!r} in {name}"
    return None


def interval_set(fact: Fact, files: list[tuple[str, dict]]) -> tuple[int, str] | None:
    """(n, where it is set) when the guard's step interval is a key the command's config file sets: `if
    self.iteration_step % self.config.checkpoints.checkpoint_interval == 0:` with `checkpoint_interval: 1000`
    in the YAML: past the benchmark's steps it never comes (the step counted up first, or the loop from past
    zero; `still_runs` says when it fires at step 0 all the same)."""
    if not fact.guard or not files:
        return None
    try:
        test = ast.parse(fact.guard, mode="eval").body
    except SyntaxError:
        return None
    for node in ast.walk(test):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod)
                and isinstance(node.left, ast.Name | ast.Attribute)):  # `step % n`, not `(step - 1) % n`
            continue
        chain: list[str] = []
        part = node.right
        while isinstance(part, ast.Attribute):
            chain.insert(0, part.attr)
            part = part.value
            if ast.unparse(part) in BASES:
                break
        else:
            continue
        for name, data in files:
            value: object = data
            for key in chain:
                value = value.get(key) if isinstance(value, dict) else None
            if type(value) is int and value > 0:
                return value, f"{'.'.join(chain)} is {value} in {name}"
    return None
