"""Entries whose flags the reading cannot see whole: no parser found, constants in the code, OmegaConf read
without a modelled CLI. A flag is proven only by the reading or the documented command."""

from __future__ import annotations

from .base import Kind
from .common import Dashed


class Unread(Dashed):
    def __init__(self, kind: Kind) -> None:
        self.kind = kind


SYSTEMS = (Unread("unknown"), Unread("constants"), Unread("omegaconf"))
