"""HfArgumentParser: one flag per dataclass field. With TrainingArguments among them, its fields come from a
table (`frameworks/transformers_trainer.json`) that may lag the installed library: a flag outside it is
said, not refused."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import Analysis
from .base import Kind, Refusal, flag_name
from .common import Dashed


class HfParser(Dashed):
    def __init__(self, kind: Kind) -> None:
        self.kind = kind

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        if not a.flags:
            return super().refusal(a, args, name, given)
        unknown = [flag_name(w) for w in args if w.startswith("--") and self.accepts(a, w, given) != "proven"]
        positional = [f"{args[0]}: {name}'s HfArgumentParser reads flags only (parse_args_into_dataclasses "
                      "refuses a word its dataclasses do not take): give its settings as flags"] \
            if a.flags_only and args and not args[0].startswith("-") else []
        return positional, [f"{f} is not a field of {name}'s dataclasses nor of TrainingArguments as wamf-tui knows "
                            "it; check it" for f in unknown]


SYSTEMS = (HfParser("hf"), HfParser("hf_trainer"))
