"""An exec'd configurator (nanoGPT's `configurator.py`): a bare argument is a Python file run in the script's
globals; `--key=value` (only with `=`) overrides a module-level name that must already exist."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import Analysis
from .base import Kind, Refusal, Verdict, flag_name
from .common import Dashed


class Configurator(Dashed):
    kind: Kind = "configurator"

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if not word.startswith("-"):
            return "unknown"
        name = flag_name(word)
        if name in a.modelled:
            return "proven"
        return "proven" if name[2:] in a.module_globals or name[2:] in a.flags else "refused"

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        words = [w for w in args if w.startswith("--")]
        problems = [f"{w}: the configurator takes --key=value only" for w in words if "=" not in w]
        known = set(a.module_globals)
        problems += [f"{w.split('=')[0]} is not a setting of {name}" for w in words
                     if "=" in w and w[2:].split("=")[0] not in known]
        return problems, []

    def settable(self, a: Analysis, setting: str) -> bool:
        return True  # every module-level name before the exec

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        return [f"--{setting.lstrip('-')}={value}"]


SYSTEMS = (Configurator(),)
