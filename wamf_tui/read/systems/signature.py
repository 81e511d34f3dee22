"""CLIs made from a function's parameters or a dataclass's fields (fire, jsonargparse's `CLI`, typer, tyro),
and option CLIs that declare each option (click, absl). Their flags are the whole set, so an unknown one is
refused, unless the function takes `**kwargs` (fire then accepts any name and the code decides)."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import Analysis
from ...wording import system_label
from .base import Kind, Refusal, Verdict, documented, flag_name
from .common import Dashed


class Signature(Dashed):
    """`whole`: the reading sees every parameter (tyro's nested classes it may not: proven or unknown)."""

    def __init__(self, kind: Kind, whole: bool = True, negation: tuple[str, ...] = ()) -> None:
        self.kind, self.whole, self.negation = kind, whole, negation

    def known(self, a: Analysis, name: str, given: Sequence[str]) -> Verdict:
        if not self.whole:
            return super().known(a, name, given)
        known = {f.replace("-", "_") for f in a.flags}
        bare = name.replace("-", "_")
        if bare in known or any(bare.startswith(n) and "__" + bare[len(n):] in known for n in self.negation):
            return "proven"
        return documented(name, given) if a.parser_open else "refused"

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        if not a.flags:
            return super().refusal(a, args, name, given)
        known = {f.replace("-", "_") for f in a.flags}
        unknown = [flag_name(w) for w in args if w.startswith("--") and flag_name(w).replace("-", "_") not in known
                   and self.accepts(a, w, given) != "proven"]
        said = [f"{f} is not among the parameters (or dataclass fields) {name}'s {system_label(self.kind)} is made "
                "from" for f in unknown]
        return ([], said) if a.parser_open else (said, [])


class Options(Signature):
    """click and absl: each option declared; booleans negated (`--no-shuffle`, absl's `--nouse_x`)."""

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        if not a.flags:
            return Dashed.refusal(self, a, args, name, given)
        negated = "--no-" if self.kind == "click" else "--no"  # absl's and those built on it
        known = set(a.flags) | {negated + f[2:] for f in a.flags}
        return [f"{flag_name(w)} is not an option of {name} ({system_label(self.kind)})" for w in args
                if w.startswith("--") and flag_name(w) not in known], []


SYSTEMS = (Signature("fire"), Signature("jsonargparse"), Signature("typer"), Signature("tyro", whole=False),
           Options("click", negation=("__no_", "__no")), Options("absl", negation=("__no_", "__no")))
