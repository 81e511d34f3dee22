"""configargparse: argparse whose options may also come from a config file named by an `is_config_file`
option (`key = value` lines, a key being an option's long name) and from environment variables (`env_var=`).
The command's flags win over the environment, the environment over the file, the file over the defaults.
The run line's flags are argparse's."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model import Analysis, Resolved
from ..nodes import walk
from .argparser import Argparse
from .base import Kind
from .modules import called, named_file

LINE = re.compile(r"^\s*([\w-]+)\s*(?:=|:|\s)\s*(.*?)\s*$")  # `basedir = ./logs`, `N_rand: 1024`, `lrate 5e-4`


def config_lines(path: Path, rel: str, flags: Sequence[str]) -> dict[str, Resolved]:
    """The options a configargparse file sets, by flag (`--basedir`), each with its `rel:line`."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    out: dict[str, Resolved] = {}
    for n, line in enumerate(text.splitlines()[:5000], 1):
        m = LINE.match(line.split("#")[0]) if not line.lstrip().startswith(("#", "[", ";")) else None
        flag = f"--{m.group(1)}" if m else ""
        if m and flag in flags:
            out[flag] = Resolved(value=m.group(2).strip("'\"")[:80] or "True", source=f"{rel}:{n}")
    return out


class ConfigArgParse(Argparse):
    kind: Kind = "configargparse"

    def uses(self, tree: ast.Module, a: Analysis) -> bool:
        return a.config_system == "argparse" and "configargparse" in {
            name.split(".")[0] for n in walk(tree) if isinstance(n, ast.Import | ast.ImportFrom)
            for name in ([x.name for x in n.names] if isinstance(n, ast.Import) else [n.module or ""])}

    def read(self, tree: ast.Module, rel: str, root: Path, a: Analysis, find: Callable[[str], Path | None],
             command: Sequence[str] = ()) -> bool:
        files = [max((c.value for c in n.args if isinstance(c, ast.Constant) and isinstance(c.value, str)), key=len)
                 for n in walk(tree) if isinstance(n, ast.Call) and called(n) == "add_argument" and any(
                     k.arg in ("is_config_file", "is_config_file_arg") for k in n.keywords) and n.args]
        named = named_file(command, root, files, suffixes=("",)) if files else None
        if named is not None:
            a.resolved.update(config_lines(*named, list(a.flags)))
        return True


SYSTEMS = (ConfigArgParse(),)
