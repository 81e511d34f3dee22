"""Hydra: `key=value` overrides of the composed config (the key must exist), `+key`, `++key`, `~key`,
`group=option`. A word is proven only against a config the reading composed."""

from __future__ import annotations

from collections.abc import Sequence

from ...model import Analysis
from ..hydra_overrides import hydra_overrides
from .base import Kind, Refusal, Verdict
from .common import Dashed


class Hydra(Dashed):
    kind: Kind = "hydra"

    def accepts(self, a: Analysis, word: str, given: Sequence[str] = ()) -> Verdict:
        if word.startswith("-"):
            return super().accepts(a, word, given)
        if a.hydra is None or not a.hydra.composed:
            return "unknown"
        return "refused" if hydra_overrides([word], a.hydra, a.script)[0] else "proven"

    def refusal(self, a: Analysis, args: Sequence[str], name: str, given: Sequence[str] = ()) -> Refusal:
        return hydra_overrides(list(args), a.hydra, name)

    def settable(self, a: Analysis, setting: str) -> bool:
        return True  # a config key: an override sets it

    def groups(self, words: Sequence[str]) -> list[list[str]]:
        return [[w] for w in words]

    def values(self, a: Analysis, args: Sequence[str]) -> dict[str, str]:
        said = (w.partition("=") for w in args)
        return {k.lstrip("+"): v for k, eq, v in said if eq and not k.startswith("-")}  # every word is one `key=value`


SYSTEMS = (Hydra(),)
