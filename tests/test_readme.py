"""The README is read by a newcomer in two minutes: short, the two commands near the top, links that resolve."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()


def test_the_readme_is_short():
    assert len(README) <= 150, f"README.md has {len(README)} lines; move detail to docs/"


def test_the_demo_and_the_test_commands_are_in_the_first_30_lines():
    for command in ("scripts/demo", "scripts/test"):
        at = [n for n, line in enumerate(README, 1) if line.startswith(command)]
        assert at and at[0] <= 30, f"{command} is not a command line in the README's first 30 lines"
        assert os.access(ROOT / command, os.X_OK)


def test_every_link_resolves():
    text = "\n".join(README)
    for doc in ("using", "reading", "development", "benchmarks"):
        assert f"docs/{doc}.md" in text
    for target in re.findall(r"\]\(([^)#]+)\)", text):
        if not target.startswith("http"):
            assert (ROOT / target).exists(), target
