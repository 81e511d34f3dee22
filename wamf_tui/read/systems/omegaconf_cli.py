"""OmegaConf's dot-list CLI: `OmegaConf.from_cli()` reads `sys.argv[1:]` as `a.b=value` (no dashes), merged
over the job's config (`OmegaConf.merge(OmegaConf.structured(Args()), file_cfg, cli)`). Over a structured
config an unknown key raises, so its dataclass fields are the whole set; over plain YAML a new key is added
silently (unproven). A dashed flag becomes a key named `--x`: refused."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Fact
from ..lengths import length_control
from .base import Kind, Refusal, Verdict
from .common import Dashed
from .modules import Classes, called, classes_of, fields, named_file, yaml_leaves

OUTPUT = re.compile(r"^(dump_dir|output_dir|out_dir|save_dir|log_dir|work_dir|checkpoint_dir|ckpt_dir)$")
NOT_A_KEY = "its OmegaConf dot-list takes key=value words, no dashes"


class OmegaConfCli(Dashed):
    kind: Kind = "omegaconf_cli"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system in ("omegaconf", "unknown", "constants") and any(
            called(n) == "from_cli" for n in ast.walk(tree))

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        classes = classes_of(tree, rel, root, find)
        structured = [c.args[0] for c in ast.walk(tree) if called(c) == "structured" and isinstance(c, ast.Call)
                      and c.args]
        named = [x.func.id if isinstance(x, ast.Call) and isinstance(x.func, ast.Name) else
                 x.id if isinstance(x, ast.Name) else "" for x in structured]
        for name in (n for n in named if n in classes):
            self._fields(name, classes, a)
        if not any(n in classes for n in named):  # over a structured base its fields are the whole set
            a.parser_open = "merges its dot-list over a config it does not type: a new key is added silently"
        for assign in (x for x in ast.walk(tree) if isinstance(x, ast.Assign)):  # keys the code reads off the
            if called(assign.value) == "from_cli":  # dot-list itself (`cli_args.config`)
                held = {t.id for t in assign.targets if isinstance(t, ast.Name)}
                a.flags.update({x.attr: None for x in ast.walk(tree) if isinstance(x, ast.Attribute)
                                and isinstance(x.value, ast.Name) and x.value.id in held and x.attr not in a.flags})
        loaded = named_file(command, root, ["config"])
        if loaded is not None:  # `OmegaConf.load(cli.config)` merged over the defaults
            a.resolved.update(yaml_leaves(*loaded))
        return True

    def _fields(self, name: str, classes: Classes, a: Analysis) -> None:
        for key, s, where in fields(name, classes):
            default = ast.unparse(s.value)[:80] if s.value is not None else None
            a.flags[key] = default
            leaf = key.split(".")[-1]
            if control := length_control(key, default, where, s.lineno):
                a.step_controls.insert(0, control)
            if OUTPUT.match(leaf):
                a.output_dirs.append(Fact(name=key, off_switch=key, file=where, line=s.lineno))

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if word.startswith("-"):
            return "refused"
        key = word.split("=")[0].lstrip("+")
        if key in a.flags:
            return "proven"
        return "unknown" if a.parser_open else "refused"

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        problems = [f"{w.split('=')[0]}: {NOT_A_KEY} ({name})" for w in args if w.startswith("-")]
        verdicts = [(w.split("=")[0], self.accepts(a, w, given)) for w in args if not w.startswith("-")]
        problems += [f"{k} is not a key of {name}'s structured config"
                     for k, v in verdicts if v == "refused"]
        doubts = [f"{k}: not a key of {name}'s config as read; OmegaConf adds it silently" for k, v in verdicts
                  if v == "unknown"]
        return problems, doubts

    def settable(self, a: Analysis, setting: str) -> bool:
        return not setting.startswith("-") and setting in a.flags

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        return [f"{setting}={value}"]

    def groups(self, words: Sequence[str]) -> list[list[str]]:
        return [[w] for w in words]

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        said = (w.partition("=") for w in args)
        return {k.lstrip("+"): v for k, eq, v in said if eq and not k.startswith("-")}


SYSTEMS = (OmegaConfCli(),)
