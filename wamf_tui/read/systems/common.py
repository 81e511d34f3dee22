"""The common case of a config system: dashed flags, proven when the parser read has them."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import Analysis
from ...wording import system_label
from .base import Kind, Refusal, Verdict, documented, flag_name


class Dashed:
    """The common case: `--flag value` / `--flag=value`, a flag proven when the parser read has it, and the
    documented command as proof where the parser is not read. Systems differ by overriding `known`."""

    kind: Kind = "unknown"

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if not word.startswith("-"):
            return "unknown"  # a positional
        name = flag_name(word)
        if name in a.modelled:
            return "proven"
        if not a.flags:
            return documented(name, given)
        return self.known(a, name, given)

    def known(self, a: Analysis, name: str, given: Sequence[str]) -> Verdict:
        return "proven" if name in a.flags else documented(name, given)

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        how = "its flags could not be read from the code" if self.kind in ("unknown", "constants") \
            else f"it reads its flags with {system_label(self.kind)}"
        unknown = [flag_name(w) for w in args if w.startswith("--") and self.accepts(a, w, given) != "proven"]
        return [], ([f"{', '.join(unknown)}: {how}, so not proven ({name})"] if unknown else [])

    def settable(self, a: Analysis, setting: str) -> bool:
        return setting.startswith("--")

    def render(self, a: Analysis, setting: str, value: object) -> list[str]:
        return [f"{setting}={value}"]

    def groups(self, words: Sequence[str]) -> list[list[str]]:
        out: list[list[str]] = []
        for w in words:
            if w.startswith("-") or not out:
                out.append([w])
            else:
                out[-1].append(w)
        return out

    def line(self, a: Analysis, args: Sequence[str], added: Sequence[str]) -> list[str]:
        return [*args, *added]

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        for i, word in enumerate(args):
            name, eq, value = word.partition("=")
            if not name.startswith("-"):
                continue
            if not eq:  # `--k v`; a switch alone is its own "True"
                following = args[i + 1] if i + 1 < len(args) else ""
                value = following if following and not following.startswith("-") and a.flags.get(name) not in (
                    "False", "True") else "True"
            out[name] = value
        return out
