"""Every config system kind has one module's system behind the protocol, and a label in the wording layer."""

from __future__ import annotations

from typing import get_args

from wamf_tui.read.systems.base import Kind
from wamf_tui.read.systems.registry import registry
from wamf_tui.wording import SYSTEM_LABELS


def test_each_kind_has_exactly_one_system_and_one_label():
    systems = registry()
    assert set(systems) == set(get_args(Kind)) == set(SYSTEM_LABELS)
    assert all(kind == s.kind for kind, s in systems.items())
    for s in systems.values():
        for method in ("accepts", "refusal", "settable", "render", "groups", "line", "values"):
            assert callable(getattr(s, method)), (s.kind, method)
