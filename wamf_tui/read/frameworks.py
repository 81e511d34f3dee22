"""Frameworks whose switches live in a library, not in the job's code, kept as data
(`wamf_tui/frameworks/*.json`): a job that hands its flags to transformers' TrainingArguments
has `--max_steps`, `--save_strategy no` and `--report_to none` though its own file defines none.
Read from the job's source only; the library is never imported."""

from __future__ import annotations

import ast
import copy
import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path

from ..model import Analysis, Fact, StepControl
from .lengths import length_role
from .outputs import OUT_NAMES
from .pins import Pin, parse
from .step import name_of

TABLES = Path(__file__).resolve().parent.parent / "frameworks"


@cache
def table(name: str) -> dict:
    return json.loads((TABLES / f"{name}.json").read_text(encoding="utf-8"))


def _default(value: ast.expr | None) -> str | None:
    """A dataclass field's default as text: `x: int = 3`, `x: str = field(default="a")`."""
    if isinstance(value, ast.Call) and name_of(value.func).endswith("field"):
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    if value is None:
        return None
    try:
        return repr(ast.literal_eval(value))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(value)[:60]


def hf_arguments(tree: ast.Module, classes: set[str], rel: str, line: int, a: Analysis, pin: Pin | None = None) -> None:
    """The flags of an HfArgumentParser over `classes`: every field of the repo's own dataclasses, and
    when one of them is (or extends) TrainingArguments, its fields and the Trainer's own switches, as the
    transformers the repo pins (`pin`) has them; today's where it pins none."""
    t = table("transformers_trainer")
    bare = pin is not None and pin.older_than(t["bool_values_since"])  # `--fp16`, never `--fp16 True`
    own = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    trainer = False
    for name in sorted(classes):
        node = own.get(name)
        if node is None:
            trainer = trainer or name in t["classes"]
            continue
        trainer = trainer or any(name_of(b).split(".")[-1] in t["classes"] for b in node.bases)
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                _field_flag(a, stmt.target.id, _default(stmt.value), bare)
        a.raises += _post_init_raises(node, rel)
    if not trainer:
        return
    fields = {f: d for f, d in t["fields"].items() if pin is None or _in_version(t, f, pin)}
    for field, default in fields.items():
        _field_flag(a, field, default, bare, keep=True)
    a.config_system = "hf_trainer"
    a.step_controls.insert(0, StepControl(name=t["steps"], file=rel, line=line, default=a.flags.get(t["steps"])))
    length_settings(a, list(a.flags), rel, line)
    made = _pinned_switches(t, fields, pin)
    old = f", transformers {pin.text()} at {pin.where}" if pin is not None else ""
    _switches(a, made, rel, line, (
        "Trainer checkpoints (save_strategy)" if made["save_off"] == t["save_off"] else
        f"Trainer checkpoints (every save_steps{old})",
        "Trainer evaluation (eval_strategy)" if made["eval_off"] == t["eval_off"] else
        f"Trainer evaluation ({'evaluation_strategy' if made['eval_off'] else 'no strategy flag'}{old})",
        "Trainer report_to" if made["trackers_off"] == t["trackers_off"] else
        f"Trainer trackers (every one installed: no report_to{old})", "output_dir", "seed"))
    if pin is not None and pin.older_than(t["logging_dir_in_output_since"]):  # TensorBoard's folder, in the
        a.flags["--logging_dir"] = "'runs/'"  # working folder (`runs/<time>_<host>`), not under output_dir
        a.output_dirs.append(Fact(name=f"logging_dir (TensorBoard's runs/ in the working folder: transformers "
                                       f"{pin.text()}, {pin.where})", off_switch="--logging_dir=...", file=rel,
                                  line=line))
    if "push_to_hub" in fields:
        a.uploads.append(Fact(name="push_to_hub", off_switch=t["upload"], file=rel, line=line))
    for fact in (*a.checkpoints, *a.evals, *a.uploads, *a.trackers):  # `if training_args.do_eval:`
        if fact.off_switch and fields.get(fact.off_switch) == "False":  # said outright: a YAML config may set it
            fact.off_switch = f"--{fact.off_switch}" if bare else f"--{fact.off_switch} False"


def _field_flag(a: Analysis, field: str, default: str | None, bare: bool, keep: bool = False) -> None:
    """One dataclass field's flag. Before transformers 4.3 a bool is a bare switch, and one that defaults
    to True is given as `--no_<field>` (its only flag) to turn it off."""
    flag = f"--no_{field}" if bare and default == "True" else f"--{field}"
    value = "False" if flag != f"--{field}" else default
    if keep:
        a.flags.setdefault(flag, value)
    else:
        a.flags[flag] = value


def _in_version(t: dict, field: str, pin: Pin) -> bool:
    """Whether the pinned transformers' TrainingArguments has `field` (the table's since/until releases)."""
    since, until = t["since"].get(field), t["until"].get(field)
    if since is not None and pin.older_than(since):
        return False
    return until is None or pin.below or pin.version[:2] <= parse(until)  # an upper bound may be older still


def _pinned_switches(t: dict, fields: Mapping[str, str | None], pin: Pin | None) -> dict:
    """The table's switches as the pinned transformers takes them: before `--save_strategy` (4.4) a save
    interval past any benchmark run; before `--eval_strategy` (4.41) `--evaluation_strategy`; before
    `--report_to` (4.3) wandb's own variable, the one that release reads."""
    if pin is None:
        return t
    return {**t, "save_off": t["save_off"] if "save_strategy" in fields else "--save_steps",
            "eval_off": t["eval_off"] if "eval_strategy" in fields else
            t["eval_off_old"] if "evaluation_strategy" in fields else None,
            "trackers_off": t["trackers_off"] if "report_to" in fields else "WANDB_DISABLED=true"}


def _post_init_raises(node: ast.ClassDef, rel: str) -> list[Fact]:
    """The `if ...: raise` checks at the top of a dataclass's `__post_init__`, each test read as one of the
    parsed settings (`self.push_to_hub` is `args.push_to_hub`): HfArgumentParser builds the dataclass, so a
    command whose values meet one stops before anything runs."""
    post = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__post_init__"), None)
    out = []
    for stmt in post.body if post is not None else []:
        if isinstance(stmt, ast.If) and isinstance(stmt.body[0], ast.Raise):
            test = copy.deepcopy(stmt.test)  # its `self` renamed below
            for n in ast.walk(test):
                if isinstance(n, ast.Name) and n.id == "self":
                    n.id = "args"
            out.append(Fact(name=f"{node.name}.__post_init__", file=rel, line=stmt.lineno,
                            guard=ast.unparse(test)[:200]))
    return out


HYPHENATED = ("typer", "tyro")  # they turn `out_dir` into `--out-dir`


def signature_flags(tree: ast.Module, function: str, line: int, rel: str, a: Analysis,
                    imported: Callable[[str], ast.ClassDef | None] = lambda name: None) -> None:
    """The flags of a CLI made from `function`'s parameters (jsonargparse's `CLI`, fire, typer, tyro), or
    from a dataclass's fields (`tyro.cli(Config)`), with the step, output-folder and seed ones among them.
    A parameter or field typed with a dataclass, of this file or one it imports (`imported`), is a nested
    group: `--train.lr` (tyro, jsonargparse), its defaults those of the instance given as the default
    (`train: TrainArgs = TrainArgs(save_interval=1000)`)."""
    made = next((n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and n.name == function), None)
    if made is None:
        a.notes.append(f"{rel}:{line}: its flags are the parameters of {function}, which is not in this file")
        return
    own = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    classes: Callable[[str], ast.ClassDef | None] = lambda name: own.get(name) or imported(name)  # noqa: E731
    hyphens = a.config_system in HYPHENATED
    for name, annotation, default, lineno in _members(made):
        _parameter(name, annotation, default, lineno, "", classes, hyphens, rel, a, 0)
    if isinstance(made, ast.FunctionDef) and made.args.kwarg is not None:  # `main(**kwargs)`: any name is taken
        a.parser_open = f"passes flags {function} does not name on to its **{made.args.kwarg.arg}"
    if a.config_system == "jsonargparse":
        a.flags.setdefault("--config", None)  # what jsonargparse adds to every CLI
        a.flags.setdefault("--print_config", None)
    _guarded_by_groups(a, hyphens)


def _guarded_by_groups(a: Analysis, hyphens: bool) -> None:
    """A save or eval under `step % train.save_interval == 0`: its switch is the group's flag
    `--train.save_interval`, known only now that the function's parameters are read."""
    for fact in (*a.checkpoints, *a.evals, *a.trackers, *a.uploads):
        if not fact.guard or fact.off_switch in a.flags:
            continue
        for dotted in re.findall(r"[A-Za-z_]\w*(?:\.\w+)+", fact.guard):
            flag = "--" + (dotted.replace("_", "-") if hyphens else dotted)
            if flag in a.flags:
                fact.off_switch = flag
                break


def _members(made: ast.FunctionDef | ast.ClassDef) -> list[tuple[str, ast.expr | None, ast.expr | None, int]]:
    """(name, annotation, default, line) of a function's parameters or a dataclass's annotated fields."""
    if isinstance(made, ast.ClassDef):
        return [(s.target.id, s.annotation, s.value, s.lineno) for s in made.body
                if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)]
    args = made.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    defaults = [None] * (len(args.posonlyargs) + len(args.args) - len(args.defaults)) + list(args.defaults) \
        + list(args.kw_defaults)
    return [(p.arg, p.annotation, d, p.lineno) for p, d in zip(params, defaults, strict=True)]


def _parameter(name: str, annotation: ast.expr | None, default: ast.expr | None, lineno: int, prefix: str,
               classes: Callable[[str], ast.ClassDef | None], hyphens: bool, rel: str, a: Analysis,
               depth: int) -> None:
    """One flag, or the group of a dataclass-typed one (`--optimizer.lr`), at most three levels deep."""
    typed = name_of(annotation) if annotation is not None else ""
    nested = classes(typed.split(".")[-1]) if typed else None
    if nested is not None and depth < 3:
        given = {k.arg: k.value for k in default.keywords if k.arg} if isinstance(default, ast.Call) and \
            name_of(default.func).split(".")[-1] == nested.name else {}
        for field, ann, value, line in _members(nested):
            _parameter(field, ann, given.get(field, value), line, f"{prefix}{name}.", classes, hyphens, rel, a,
                       depth + 1)
        return
    flag = "--" + prefix + (name.replace("_", "-") if hyphens else name)
    a.flags[flag] = _default(default)
    if role := length_role(name):
        a.step_controls.append(StepControl(name=flag, default=a.flags[flag], file=rel, line=lineno, role=role))
    elif OUT_NAMES.search(name):
        a.output_dirs.append(Fact(name=name, off_switch=f"{flag}=...", file=rel, line=lineno))
    elif name == "seed":
        a.seeds.append(Fact(name=name, off_switch=f"{flag}=...", file=rel, line=lineno))


def factory_flags(factories: list[tuple[str, list[str], int]], classes: Callable[[str], ast.ClassDef | None],
                  rel: str, a: Analysis) -> None:
    """The options of argparse groups made from dataclasses (Megatron's `ArgumentGroupFactory(TrainingConfig,
    exclude=[...]).build_group(parser)`): each field not left out is `--field-name`; a bool is a switch,
    `--name` when it defaults to False and `--no-name` / `--disable-name` when to True; a field's
    `metadata={"argparse_meta": {"arg_names": [...]}}` names it outright."""
    for cls, exclude, line in factories:
        made = classes(cls)
        if made is None:
            a.notes.append(f"{rel}:{line}: the options made from {cls} are not read (its class is not in the repo)")
            continue
        for name, annotation, value, _ in _members(made):
            if name in exclude or name.startswith("_"):
                continue
            default = _default(value)
            named = _arg_names(value)
            if annotation is not None and name_of(annotation) == "bool":
                names = named or ([f"--{name}".replace("_", "-")] if default != "True" else
                                  [f"--no-{name}".replace("_", "-"), f"--disable-{name}".replace("_", "-")])
                default = "False"
            else:
                names = named or [f"--{name}".replace("_", "-")]
            for flag in names:
                a.flags.setdefault(flag, default)
            if role := length_role(name):
                a.step_controls.append(StepControl(name=names[0], default=default, file=rel, line=line, role=role))


def _arg_names(value: ast.expr | None) -> list[str]:
    """`field(..., metadata={"argparse_meta": {"arg_names": ["--save-interval", ...]}})`: the names given."""
    if not (isinstance(value, ast.Call) and name_of(value.func).endswith("field")):
        return []
    meta = next((k.value for k in value.keywords if k.arg == "metadata"), None)
    try:
        names = ast.literal_eval(meta).get("argparse_meta", {}).get("arg_names", []) if meta is not None else []
    except (ValueError, TypeError, SyntaxError, AttributeError, RecursionError):
        return []
    return [n for n in names if isinstance(n, str) and n.startswith("--")]


def lightning_cli(rel: str, line: int, a: Analysis) -> None:
    """A LightningCLI builds the Trainer from `--trainer.*` arguments: those are the benchmark's switches.
    `--model.*` and `--data.*` come from the job's own classes and are not checked."""
    t = table("lightning_cli")
    for flag in t["flags"]:
        a.flags.setdefault(flag, None)
    a.step_controls.insert(0, StepControl(name=t["steps"], default="-1", file=rel, line=line))
    length_settings(a, t["flags"], rel, line)
    _switches(a, t, rel, line, ("Trainer checkpoints (ModelCheckpoint)", "Trainer validation loop", "Trainer logger",
                                "default_root_dir", "seed_everything"))


def length_settings(a: Analysis, names: list[str], rel: str, line: int,
                    defaults: Mapping[str, str | None] | None = None) -> None:
    """The settings among a library's own (TrainingArguments' fields, the Trainer's arguments) that govern the
    run's length, each once, after those the job's code already named; `defaults`: their values (else the
    flags')."""
    for name in names:
        if (role := length_role(name)) and all(c.name != name for c in a.step_controls):
            default = (defaults if defaults is not None else a.flags).get(name)
            a.step_controls.append(StepControl(name=name, default=default, file=rel, line=line, role=role))


def _switches(a: Analysis, t: dict, rel: str, line: int, names: tuple[str, str, str, str, str]) -> None:
    """A framework's own save, eval, tracker, output-folder and seed switches, from its table, as facts."""
    save, evaluation, tracker, output, seed = names
    a.checkpoints.append(Fact(name=save, off_switch=t["save_off"], file=rel, line=line))
    a.evals.append(Fact(name=evaluation, off_switch=t["eval_off"], file=rel, line=line))
    a.trackers.append(Fact(name=tracker, off_switch=t["trackers_off"], file=rel, line=line))
    a.output_dirs.insert(0, Fact(name=output, off_switch=f"{t['output']}=...", file=rel, line=line))
    a.seeds.insert(0, Fact(name=seed, off_switch=f"{t['seed']}=...", file=rel, line=line))
