"""Where the checkout is, found from the file system alone.

No git call and no heavy import: the first screen and `wamf-tui detect` need the
root before any git call has answered.
"""

from __future__ import annotations

from pathlib import Path

from .files import read_regular


def find_root(path: str | Path) -> Path:
    """The nearest folder at or above `path` holding `.git`, or `path` itself."""
    p = Path(path).expanduser().resolve()
    for d in (p, *p.parents):
        if (d / ".git").exists():
            return d
    return p


def is_bare(path: str | Path) -> bool:
    p = Path(path)
    if (p / ".git").exists() or not (p / "HEAD").is_file() or not (p / "objects").is_dir():
        return False
    try:
        return b"bare = true" in read_regular(p / "config", 1 << 20)  # never a FIFO, never endless
    except OSError:
        return False


def status_entries(porcelain: str) -> list[tuple[str, str]]:
    """(XY, path) of each entry of `git status --porcelain=v1 -z`; a rename's source is skipped."""
    entries = porcelain.split("\0")
    out = []
    i = 0
    while i < len(entries):
        entry = entries[i]
        i += 1
        if len(entry) < 4:
            continue
        if entry[0] in "RC":
            i += 1  # the rename source follows
        out.append((entry[:2], entry[3:]))
    return out
