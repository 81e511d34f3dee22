"""Project conventions the later steps propose: the repo's own test command and
a correctness recorder it already ships."""

from __future__ import annotations

import re
from pathlib import Path

from ..infra.files import read_regular

RECORDER_DIRS = ("research/core/probe", "probe", "parity", "tools/probe", "src/probe")
_IMPORT = re.compile(
    r"^[ \t]*(?:from\s+([\w.]+)\s+import\s+(?:[\w, ]*\b)?(probe|parity)\b"
    r"|(?:from|import)\s+((?:[\w.]*\.)?(?:probe|parity))\b)",
    re.M,
)


def _read(path: Path, limit: int = 64 * 1024) -> str:
    try:
        return read_regular(path, limit).decode("utf-8", errors="replace")
    except OSError:
        return ""


def find_test_command(root: Path) -> str | None:
    """pytest / tox / nox / make test, in the order a maintainer would reach for them."""
    makefile = _read(root / "Makefile")
    if re.search(r"^test\s*:", makefile, re.M):
        return "make test"
    if (root / "noxfile.py").is_file():
        return "nox"
    if (root / "tox.ini").is_file() and "[testenv" in _read(root / "tox.ini"):
        return "tox"
    if (
        "[tool.pytest" in _read(root / "pyproject.toml")
        or (root / "pytest.ini").is_file()
        or "[tool:pytest]" in _read(root / "setup.cfg")
        or "[pytest]" in _read(root / "tox.ini")
    ):
        return "pytest"
    for d in ("tests", "test"):
        if (root / d).is_dir():
            return f"pytest {d}"
    return None


def find_recorder(root: Path, files: list[str] | None = None) -> str | None:
    """A probe or parity module the repo already has, and how it is switched on."""
    for d in RECORDER_DIRS:
        if (root / d).is_dir() or (root / f"{d}.py").is_file():
            return f"{d} (the repo's own recorder; switched on as its module says, e.g. PROBE=1)"
    for rel in (files or [])[:2000]:
        if not rel.endswith(".py"):
            continue
        m = _IMPORT.search(_read(root / rel))
        if m:
            name = f"{m.group(1)}.{m.group(2)}" if m.group(2) else m.group(3)
            env = "PARITY=1 PARITY_OUT=records.jsonl" if name.endswith("parity") else "PROBE=1"
            return f"{name} (already imported in {rel}; switched on with {env})"
    return None
