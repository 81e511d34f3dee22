"""argparse: `--flag value` or `--flag=value`, any unambiguous prefix; an unknown flag exits 2, unless the
parser passes it on (`parse_known_args`, parents, computed names: `a.parser_open`)."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import Analysis
from .base import Kind, Refusal, Verdict, documented, flag_name
from .common import Dashed


class Argparse(Dashed):
    kind: Kind = "argparse"

    def known(self, a: Analysis, name: str, given: Sequence[str]) -> Verdict:
        options = [f for f in a.flags if f.startswith("-")]
        name = _doubled(name, options)
        if name in options or len([o for o in options if o.startswith(name)]) == 1:
            return "proven"
        if a.parser_open:  # another parser may take it, or none
            return documented(name, given)
        return "refused"

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        words = [w for w in args if w.startswith("--") or _long(w)]  # `-rnn_size` too; never a short `-b`
        if a.parser_open:  # what it declares is its own; another flag may be passed on, or dropped
            unknown = [flag_name(w) for w in words if self.accepts(a, w, given) != "proven"]
            return [], [f"{', '.join(unknown)}: not declared, and {name} {a.parser_open}"] if unknown else []
        options = [f for f in a.flags if f.startswith("-")]
        problems = []
        for w in words:
            flag = _doubled(w.split("=")[0], options)
            if flag in options:
                continue
            matches = [o for o in options if o.startswith(flag)]
            if len(matches) != 1:  # argparse takes an unambiguous prefix, nothing else
                problems.append(f"{flag} is not an option of {name}" + (f" (could be {', '.join(matches[:3])})"
                                                                       if matches else ""))
        return problems, []


def _long(word: str) -> bool:
    """A single-dash long option (`-rnn_size`, OpenNMT's and Caffe's style), not a short one or a number."""
    name = flag_name(word)
    return name.startswith("-") and not name.startswith("--") and len(name) > 2 and name[1].isalpha()


def _doubled(name: str, options: Sequence[str]) -> str:
    """`-rnn_size` as the `--rnn_size` the parser declares beside it (a parser's longest spelling is the one
    read); as written where no such option exists."""
    return f"-{name}" if _long(name) and f"-{name}" in options else name


SYSTEMS = (Argparse(),)
