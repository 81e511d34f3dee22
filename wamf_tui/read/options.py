"""The parser declarations the reader meets in a module: argparse options (with their defaults, the value
their help says switches them off, and whether they set the step count or an output folder), click and absl
options, a function made a CLI (fire, jsonargparse, typer, tyro), accelerate's trackers, and the keywords of an
HF TrainingArguments or a Lightning Trainer. A mixin of `source._Reader`: it reads and fills `self.r`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ..model import Fact, Need, Required, StepControl
from .frameworks import table
from .lengths import length_role
from .needs import argparse_required
from .outputs import OUT_NAMES
from .step import name_of
from .systems.modules import INPUT, LOADED, not_here

COMPUTED = "adds flags whose names are computed when it runs"  # a parser_open: `add_argument(f"--{k}")`


class OptionsReader:
    """The option-declaring calls of a module; `source._Reader` sets up what these methods read and fill."""

    hf_line: int  # the line of the first HfArgumentParser call
    hf_parsers: set[str]  # the repo's own subclasses of one
    flags_parse: bool  # the entry parses flags into dataclasses, keeping no leftover word
    file_parse: bool  # the entry also parses a file, or keeps the words its dataclasses lack
    name_tuples: dict[str, list[str]]
    accelerate_trackers: list[int]
    fit_switches: list[tuple[int, str]]  # (line of a training call, the setting its `if` needs)
    lightning_cli: int  # the line of a LightningCLI call

    def _config(self, node: ast.Call, name: str, last: str) -> None:
        if last == "ArgumentParser" and self.r.config_system == "unknown":
            self.r.config_system = "argparse"
        if last == "ArgumentParser" and any(k.arg == "parents" for k in node.keywords):
            self.r.parser_open = self.r.parser_open or "builds its parser on parent parsers"
        elif last == "parse_known_args" and not any(  # `if ignore_unknown_args:`, a parameter off by default
                isinstance(g, ast.Name) and g.id in self.off_by_default for g in self.guards) \
                and not self._drops_the_rest(node):  # `opt, _ = parse_known_args()`: an unknown flag does nothing
            self.r.parser_open = self.r.parser_open or "reads its flags with parse_known_args (unknown flags pass)"
        elif last == "parse_args_into_dataclasses" and self.rel == self.r.script:
            self.flags_parse = True  # `return_remaining_strings=True` keeps the words its dataclasses lack
            self.file_parse = self.file_parse or any(k.arg == "return_remaining_strings" and not (
                isinstance(k.value, ast.Constant) and k.value.value is False) for k in node.keywords)
        elif last in FILE_PARSES and self.rel == self.r.script:  # `parse_yaml_file(sys.argv[1])`, a subclass's parse()
            self.file_parse = True
        elif last == "_add_action":  # `tune run` copies torchrun's actions into its own parser
            self.r.parser_open = self.r.parser_open or "copies options from another parser when it runs"
        elif last in HF_PARSERS or last in self.hf_parsers:
            self.r.config_system = "hf"
            self.file_parse = self.file_parse or last in HF_PARSERS[1:]  # TRL's and the handbook's take a YAML
            if last in HF_PARSERS[1:]:  # TRL's and the alignment handbook's take a YAML file as well
                self.r.flags.setdefault("--config", None)
            self.hf_line = self.hf_line or node.lineno
            named = [n.id for a in node.args for n in ast.walk(a) if isinstance(n, ast.Name)]
            self.hf_classes.update(c for n in named for c in self.name_tuples.get(n, [n]))
        elif last in SIGNATURE_CLIS and self._signature_cli(node, name, last):
            pass
        elif last in ("LightningCLI", "CLI") and "lightning" in " ".join(self.imports).lower() \
                and not (last == "CLI" and "jsonargparse" in self.imports):  # a helper wrapping jsonargparse's CLI
            self.r.config_system = "lightning_cli"
            self.lightning_cli = self.lightning_cli or node.lineno
        elif name == "fire.Fire":
            self.r.config_system = "fire"
        elif name in ("typer.Typer", "typer.run"):
            self.r.config_system = "typer"
        elif name == "exec" and node.args and "configurator" in ast.dump(node.args[0]):
            self.configured = True  # names assigned below are not settings the configurator can reach
            self.r.config_system = "configurator"
        elif last == "ArgumentGroupFactory" and node.args and isinstance(node.args[0], ast.Name):
            exclude = next((k.value for k in node.keywords if k.arg == "exclude"), None)
            left = [e.value for e in exclude.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)] \
                if isinstance(exclude, ast.List | ast.Tuple) else []
            self.factories.append((node.args[0].id, left, node.lineno))
        elif last == "add_config_arguments" and "deepspeed" in name:  # `deepspeed.add_config_arguments(parser)`
            for opt, default in table("deepspeed")["parser_arguments"].items():
                self._option(opt, default, node, None)
        elif last == "add_argument" or last in ("add", "add_arg") and node.args and isinstance(
                node.args[0], ast.Constant) and str(node.args[0].value).startswith("-"):  # configargparse's aliases
            opts = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            # the factory's own `add_argument(*arg_names)`: its flags are read from the dataclasses it is given
            if not opts and node.args and not (self.classes and self.classes[-1][0] == "ArgumentGroupFactory"):
                self.r.parser_open = self.r.parser_open or COMPUTED
            required = argparse_required(node, self.rel) if self.rel == self.r.script else None
            if required is not None:
                self.r.required.append(required)
            if opts:
                kw = {k.arg: k.value for k in node.keywords if k.arg}
                if required is None and self.rel == self.r.script and _elsewhere(max(opts, key=len), kw.get("default")):
                    self.r.required.append(Required(name=max(opts, key=len), kind="option", file=self.rel,
                                                    line=node.lineno))
                flag = kw.get("action") is not None and "store_true" in ast.dump(kw["action"])
                self._option(max(opts, key=len), "False" if flag else literal_text(kw.get("default")), node,
                             literal_text(kw.get("help")))
                # given alone it is on: a store_true, or `nargs="?"` with a `const` (`-t` is `--train True`)
                bare = flag or literal_text(kw.get("nargs")) == "'?'" and "const" in kw
                self.spellings[max(opts, key=len)] = (opts, bare)
        elif last == "Accelerator":
            for k in node.keywords:
                if k.arg == "log_with":
                    self._accelerate_trackers(k.value, node)
                elif k.arg is None and isinstance(k.value, ast.Name) and k.value.id in self.log_kwargs:
                    self._accelerate_trackers(self.log_kwargs[k.value.id], node)  # `**accelerator_log_kwargs`
        elif last in ("option", "argument") and name.startswith("click."):
            self._click(node, last)
        elif last in ABSL_DEFINES and "flags" in name:
            self._absl(node, last)
        elif last in REQUIRED_FLAGS and "flags" in name and node.args and self.rel == self.r.script:
            listed = node.args[0].elts if isinstance(node.args[0], ast.List | ast.Tuple) else [node.args[0]]
            self.r.required += [Required(name=f"--{flag}", kind="option", file=self.rel, line=node.lineno)
                                for flag in map(string_value, listed) if flag]  # `mark_flags_as_required([...])` too
        # HF TrainingArguments and Lightning Trainer keywords: the library runs the loop
        if last in ("TrainingArguments", "Seq2SeqTrainingArguments", "SFTConfig"):
            self.r.kind = "training"
            for k in node.keywords:
                self._library_keyword(k, HF_KEYS, node, hf=True)
        elif last == "Trainer" and "lightning" in " ".join(self.imports).lower():
            self.r.kind = "training"
            for k in node.keywords:
                self._library_keyword(k, PL_KEYS, node, hf=False)
            self._lightning_defaults(node)

    def _trains_with(self, node: ast.Call) -> None:
        """The entry trains only under `if opt.train:` (CompVis's `main.py -t`, HF's `if training_args.do_train:`):
        the switch, judged once the module's flags are all known (`trains_with`)."""
        on = self.guard() if self.rel == self.r.script else None
        if on is not None:
            self.fit_switches.append((node.lineno, on))

    def trains_with(self) -> None:
        """A switch that defaults to off and guards the training call: the command must give it, or the job sets
        up and exits having trained nothing."""
        hf = self.r.config_system in ("hf", "hf_trainer")  # a dataclass bool field: `--do_train` alone is True
        for line, on in self.fit_switches:
            flag = on if on.startswith("-") else f"--{on}"
            if self.r.flags.get(flag) != "False" or not (flag in self.spellings or hf):
                continue
            names, bare = self.spellings.get(flag, ([flag], True))
            self.r.needs.append(Need(code="trains_with", file=self.rel, line=line, why=f"trains only with {flag} given",
                                     words=[flag] if bare else [flag, "True"], spellings=names))

    def _drops_the_rest(self, call: ast.Call) -> bool:
        """`opt, unknown = parser.parse_known_args()` with `unknown` never read again in the function: the words
        the parser does not know are dropped, so the declared options are all it takes (OpenNMT-py's)."""
        scope = self.function_node
        if scope is None:
            return False
        for node in ast.walk(scope):
            if isinstance(node, ast.Assign) and node.value is call and isinstance(node.targets[0], ast.Tuple) \
                    and len(node.targets[0].elts) == 2 and isinstance(rest := node.targets[0].elts[1], ast.Name):
                return not any(isinstance(n, ast.Name) and n.id == rest.id and isinstance(n.ctx, ast.Load)
                               for n in ast.walk(scope))
        return False

    def _option(self, opt: str, default: str | None, node: ast.Call, helped: str | None) -> None:
        """One option of the job's parser, whatever declares it: its default, the value its help says
        switches it off (`-1 disables`), and whether it sets the step count or an output folder."""
        self.r.flags[opt] = default
        self.r.flag_sites.setdefault(opt, []).append(f"{self.rel}:{node.lineno}")
        self.options += 1
        off = re.search(r"(?<![\w.])(-1|0)\b[^.;]{0,20}\b(disables?|turns? (it )?off|means (no|never|off))"
                        r"|\b(disable[sd]?|off)\b[^.;]{0,20}?(?<![\w.])(-1|0)\b", helped or "", re.I)
        if off:
            self.r.off_values[opt] = off.group(1) or off.group(6)
        dest = opt.lstrip("-").replace("-", "_")
        if role := length_role(dest):
            self.r.step_controls.append(StepControl(name=opt, file=self.rel, line=node.lineno, default=default,
                                                    role=role))
        # a dotted group's field by its own name or with its group's (`--ckpt.output_dir`, `--ckpt.path`); `--project`,
        # default `ROOT / 'runs/train'`
        if OUT_NAMES.search(dest.rsplit(".", 1)[-1]) or OUT_NAMES.search(dest.replace(".", "_")) \
                or SAVES_TO.search(helped or "") and "/" in (default or ""):
            self.fact("output_dirs", opt, node, opt)

    def _accelerate_trackers(self, value: ast.expr, node: ast.Call) -> None:
        """`Accelerator(log_with="wandb")` or `log_with=args.report_to`: the trackers accelerate starts. It takes
        no value that means none (it refuses "none"), so only the tracker's own variable can stop one."""
        if isinstance(value, ast.Attribute) and dotted_name(value.value) in ("args", "cfg", "config", "self.args"):
            flag = self.flag_for(value.attr)  # a dataclass field the parser call below declares: not known yet,
            named = (self.r.flags.get(flag) or "").strip("'\"") if flag in self.r.flags else value.attr  # its name
        else:
            named = string_value(value) or ""
        for tracker in (t.strip() for t in named.split(",")):
            if tracker and tracker != "None":
                self.r.trackers.append(self.made("comet" if tracker == "comet_ml" else tracker, node))
                self.accelerate_trackers.append(len(self.r.trackers) - 1)

    def _click(self, node: ast.Call, last: str) -> None:
        """`@click.option("--max-steps", "-n", default=10, is_flag=True)`, `@click.argument("data")`."""
        self.r.config_system = "click"
        names = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        required = kw.get("required")
        if last == "argument":
            if names and self.rel == self.r.script and "default" not in kw and not (
                    isinstance(required, ast.Constant) and required.value is False):
                self.r.required.append(Required(name=names[0], kind="positional", file=self.rel, line=node.lineno))
            return
        opts = [n.split("/")[0] for n in names if n.startswith("-")]  # `--shuffle/--no-shuffle`
        if not opts:
            return
        opt = max(opts, key=len)
        flag = isinstance(kw.get("is_flag"), ast.Constant) and getattr(kw["is_flag"], "value", False) is True
        self._option(opt, "False" if flag and "default" not in kw else literal_text(kw.get("default")), node,
                     literal_text(kw.get("help")))
        if isinstance(required, ast.Constant) and required.value is True and self.rel == self.r.script:
            self.r.required.append(Required(name=opt, kind="option", file=self.rel, line=node.lineno))

    def _absl(self, node: ast.Call, last: str) -> None:
        """`flags.DEFINE_integer("max_steps", 1000, "help")`: the option `--max_steps`."""
        self.r.config_system = "absl"
        order = ("name", "default", "enum_values", "help") if last == "DEFINE_enum" else ("name", "default", "help")
        args = {**dict(zip(order, node.args, strict=False)), **{k.arg: k.value for k in node.keywords if k.arg}}
        flag = string_value(args.get("name"))
        if flag:
            self._option(f"--{flag}", literal_text(args.get("default")), node, literal_text(args.get("help")))

    def _signature_cli(self, node: ast.Call, name: str, last: str) -> bool:
        """`CLI(main)` (jsonargparse), `fire.Fire(main)`, `typer.run(main)`, `tyro.cli(main)`: the flags are
        the parameters of a function of this file, read once the whole file is (`signature_flags`)."""
        system = SIGNATURE_CLIS[last]
        imported = " ".join(self.imports)
        if system.split()[0] not in imported or not node.args:
            return False
        if system == "tyro" and isinstance(node.args[0], ast.Attribute):  # `tyro.cli(Trainer.Config)`: its
            self.r.config_system = system  # sections are read from the classes (`tyro_config`)
            return True
        if not isinstance(node.args[0], ast.Name):
            return False
        self.r.config_system = system
        self.cli_function = (node.args[0].id, node.lineno)
        return True

    def _lightning_defaults(self, node: ast.Call) -> None:
        """A Lightning `Trainer(...)` built in code keeps the defaults it is not given: a logger (TensorBoard, else
        CSV) and a ModelCheckpoint at each epoch's end, both under `lightning_logs/` of the folder it runs in
        (ControlNet's `pl.Trainer(gpus=1, precision=32, callbacks=[logger])`). `**kwargs` may give any of them."""
        given = {k.arg for k in node.keywords}
        if None in given:
            return
        if "logger" not in given:
            self.r.trackers.append(self.made("Lightning's default logger (lightning_logs/)", node))
        if not given & {"enable_checkpointing", "checkpoint_callback"}:
            save = self.made("Lightning's default ModelCheckpoint (each epoch's end)", node)
            save.epoch_end = True
            self.r.checkpoints.append(save)
        if "default_root_dir" not in given:
            self.r.output_dirs.append(Fact(name="'lightning_logs'", file=self.rel, line=node.lineno))

    def _library_keyword(self, k: ast.keyword, table: dict[str, str], node: ast.Call, hf: bool) -> None:
        if k.arg is None:
            return
        if role := length_role(k.arg):
            self.r.step_controls.append(StepControl(name=k.arg, file=self.rel, line=k.value.lineno,
                                                    default=literal_text(k.value), role=role))
        kind = table.get(k.arg)
        if kind and not hf and isinstance(k.value, ast.Constant) and k.value.value in (False, None, 0):
            return  # `logger=False`, `enable_checkpointing=False`, `limit_val_batches=0`: off as written
        if kind:
            off = {
                "report_to": "--report_to none", "save_strategy": "--save_strategy no",
                "eval_strategy": "--eval_strategy no", "evaluation_strategy": "--eval_strategy no",
                "push_to_hub": "--push_to_hub False", "seed": "--seed",
                "output_dir": "--output_dir", "logging_dir": "--logging_dir",
            }.get(k.arg) if hf else f"{k.arg}=..."
            getattr(self.r, kind).append(Fact(name=k.arg, file=self.rel, line=k.value.lineno, off_switch=off))


# an option's help that says the job writes there (`save to project/name`, `output directory`, open_clip's
# "Where to store tensorboard logs")
SAVES_TO = re.compile(r"\b(save[sd]?|writes?|stores?)\b[^.;]{0,20}?\b(to|in|into)\b|\boutput (dir|directory|folder)\b"
                      r"|\bwhere to (save|store|write|put|keep)\b", re.I)


HF_PARSERS = ("HfArgumentParser", "TrlParser", "H4ArgumentParser")  # the last two extend the first
FILE_PARSES = ("parse_yaml_file", "parse_json_file", "parse_dict", "parse_args_and_config", "parse")


REQUIRED_FLAGS = ("mark_flag_as_required", "mark_flags_as_required")  # absl's


SIGNATURE_CLIS = {"CLI": "jsonargparse", "Fire": "fire", "run": "typer", "cli": "tyro"}


# The last name part of every call visit_Call acts on; any other call is only walked into.
# absl's flag definitions: DEFINE_x(name, default, help); booleans are switched off with `--noname`
ABSL_DEFINES = ("DEFINE_integer", "DEFINE_string", "DEFINE_float", "DEFINE_bool", "DEFINE_boolean", "DEFINE_enum",
                "DEFINE_list", "DEFINE_multi_string", "DEFINE_multi_integer")


HF_KEYS = {
    "report_to": "trackers", "save_strategy": "checkpoints", "eval_strategy": "evals",
    "evaluation_strategy": "evals", "push_to_hub": "uploads", "seed": "seeds", "output_dir": "output_dirs",
    "logging_dir": "output_dirs",
}


PL_KEYS = {
    "logger": "trackers", "enable_checkpointing": "checkpoints", "limit_val_batches": "evals",
    "default_root_dir": "output_dirs", "check_val_every_n_epoch": "evals",
}


def dotted_name(node: ast.AST) -> str:
    return name_of(node, calls=True)


def string_value(node: ast.AST | None) -> str | None:
    """A string literal's text (a flag's name), None for anything else."""
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def literal_text(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    try:
        return repr(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)[:60] if hasattr(ast, "unparse") else None


def _elsewhere(opt: str, default: ast.expr | None) -> bool:
    """An input whose default is an absolute path this machine lacks (mae's `--data_path
    /datasets01/imagenet_full_size/061417/`, a cluster's folder): the user must give theirs."""
    value = string_value(default) or ""
    return value.startswith("/") and bool(INPUT.search(opt.lstrip("-")) or LOADED.search(value)) \
        and not_here(value, Path("/"))
