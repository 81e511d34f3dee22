"""A job's settings at the values its parser resolves when the command leaves them out, and the
three-valued truth of a condition under those values.

`True`/`False` is what the code decides; `None` means the reading cannot tell (a call, a value
computed at run time, a setting whose default is not known), and no verdict may rest on it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from ..model import Resolved
from .nodes import walk

_NUMBER = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-inf|-nan", re.I)


def is_option(word: str) -> bool:
    """Whether a command word is an option, not a value: `--ckpt.save_steps -1` gives `-1` as the value
    (argparse reads a negative number as one where the parser has no option that looks like a number)."""
    return word.startswith("-") and not _NUMBER.fullmatch(word)


UNKNOWN = object()  # a setting whose default cannot be read as a literal


def given_values(words: Sequence[str]) -> list[str]:
    """The values among a command's words (`--algorithm IGA` -> `IGA`, `--lr=3` -> `3`, `model=x` -> `x`): a flag's
    own name is never one."""
    return [w.split("=", 1)[-1] for w in words if not w.startswith("-") or "=" in w]


def dest(flag: str) -> str:
    """The attribute a flag's value lands on: `--data-dir` -> `data_dir`, `--train-iters=30` -> `train_iters`."""
    return flag.split("=")[0].lstrip("-").replace("-", "_")


# Names a job's parsed settings are conventionally held in; any name a parse call's result is assigned to
# joins them (`script_args, training_args = parser.parse_args_into_dataclasses()`).
SETTINGS_OBJECTS = ("args", "opt", "opts", "FLAGS", "cfg", "config")
PARSE_CALLS = ("parse_args", "parse_known_args", "parse_args_into_dataclasses", "parse_args_and_config",
               "parse_yaml_file", "parse_json_file", "parse_dict")


class Values(dict[str, object]):
    """Settings by attribute name, and the names of the objects the job reads them from: `config.x` of a
    library's own object is not the job's setting `x`."""

    def __init__(self, values: Mapping[str, object], objects: frozenset[str]) -> None:
        super().__init__(values)
        self.objects = objects


def settings_objects(tree: ast.AST) -> frozenset[str]:
    """The conventional names, and every name a parse call's result is assigned to in `tree`."""
    names = set(SETTINGS_OBJECTS)
    for node in walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            func = node.value.func
            last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if last in PARSE_CALLS:
                names.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return frozenset(names)


def defaults(flags: Mapping[str, str | None], objects: frozenset[str] = frozenset(SETTINGS_OBJECTS)) -> Values:
    """Each flag's default as a Python value, by the attribute its parser stores it on (`None` for a flag
    declared without a default, as argparse leaves it); UNKNOWN where the text is no literal."""
    values: dict[str, object] = {}
    for flag, text in flags.items():
        if not flag.startswith("-"):
            continue
        try:
            values[dest(flag)] = None if text is None else ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            values[dest(flag)] = UNKNOWN
    return Values(values, objects)


BOOL_WORDS = {"true": True, "yes": True, "t": True, "y": True, "1": True,
              "false": False, "no": False, "f": False, "n": False, "0": False}  # HfArgumentParser's string_to_bool


def resolved(flags: Mapping[str, str | None], command: Sequence[str], objects: frozenset[str],
             bools: bool = False) -> Values:
    """The defaults with what the command gives laid over them. A value the command gives is known only
    where its parser's conversion is: a switch given bare (default False) is True; with `bools` (an
    HfArgumentParser's bool field, `--push_to_hub False`) a bool's word is read as string_to_bool reads it;
    any other is UNKNOWN, never a guess at its type."""
    values = defaults(flags, objects)
    for i, word in enumerate(command):
        if not word.startswith("--"):
            continue
        flag, eq, given = word.partition("=")
        key = dest(flag)
        if key not in values:
            continue
        bare = not eq and (i + 1 == len(command) or is_option(command[i + 1]))
        given = given if eq else "" if bare else command[i + 1]
        if bare and flags.get(flag) in ("False", "True" if bools else "False"):
            values[key] = True
        elif bools and flags.get(flag) in ("True", "False") and given.lower() in BOOL_WORDS:
            values[key] = BOOL_WORDS[given.lower()]
        else:
            values[key] = UNKNOWN
    return values


def setting(node: ast.AST, values: Values) -> str | None:
    """The setting an expression reads (`args.data_dir`, `script_args.dataset_name`): an attribute, naming a
    known setting, of one of the objects the job's settings are held in."""
    if isinstance(node, ast.Attribute) and node.attr in values and (
            isinstance(node.value, ast.Name) and node.value.id in values.objects
            or isinstance(node.value, ast.Attribute) and node.value.attr in values.objects  # a trainer's own
            and isinstance(node.value.value, ast.Name) and node.value.value.id == "self"):  # `self.cfg.loss_fn`
        return node.attr
    return None


def settings_read(node: ast.AST, values: Values) -> list[str]:
    """Every known setting an expression reads, in order, once each."""
    return list(dict.fromkeys(s for n in ast.walk(node) if (s := setting(n, values))))


TYPES = {"int": int, "str": str, "float": float, "bool": bool, "list": list, "dict": dict, "tuple": tuple}


def value_of(node: ast.AST, values: Values, local: Mapping[str, object] | None = None) -> object:
    """The value of a setting, a local name followed from one (`local`), or a literal; UNKNOWN else."""
    name = setting(node, values)
    if name is not None:
        return values[name]
    if isinstance(node, ast.Name) and local is not None:
        return local.get(node.id, UNKNOWN)
    if isinstance(node, ast.Constant):
        return node.value
    return UNKNOWN


def truth(node: ast.AST, values: Values, local: Mapping[str, object] | None = None) -> bool | None:
    """Whether a condition holds with every setting at its resolved value; None where that cannot be read."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = truth(node.operand, values, local)
        return None if inner is None else not inner
    if isinstance(node, ast.BoolOp):
        parts = [truth(v, values, local) for v in node.values]
        stop = isinstance(node.op, ast.Or)  # `or` is decided by a True, `and` by a False
        if stop in parts:
            return stop
        return None if None in parts else not stop
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = value_of(node.left, values, local), value_of(node.comparators[0], values, local)
        if left is UNKNOWN or right is UNKNOWN:
            return None
        op = node.ops[0]
        if isinstance(op, ast.Is | ast.IsNot):
            return (left is right) == isinstance(op, ast.Is)
        if isinstance(op, ast.Eq | ast.NotEq):
            return (left == right) == isinstance(op, ast.Eq)
        if isinstance(left, int | float) and isinstance(right, int | float):  # `args.sequence_parallel_size > 1`
            order = {ast.Gt: left > right, ast.GtE: left >= right, ast.Lt: left < right, ast.LtE: left <= right}
            return order.get(type(op))
        return None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance" \
            and len(node.args) == 2 and isinstance(node.args[1], ast.Name) and node.args[1].id in TYPES:
        value = value_of(node.args[0], values, local)
        return None if value is UNKNOWN else isinstance(value, TYPES[node.args[1].id])
    value = value_of(node, values, local)
    return None if value is UNKNOWN else bool(value)


def layered(defaults: Mapping[str, str | None], files: Mapping[str, Resolved],
            command: Mapping[str, str]) -> dict[str, Resolved]:
    """Each setting's value as its parser resolves it: the default, then the config file the command names
    (`files`, each value with its `path:line`), then the command's own word; a later layer wins."""
    out = {k: Resolved(value=v) for k, v in defaults.items()}
    out.update(files)
    out.update({k: Resolved(value=v, source="command") for k, v in command.items()})
    return out
