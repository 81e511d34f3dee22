"""Where the checkout is, found from the file system alone.

No git call and no heavy import: the first screen and `wamf-tui detect` need the
root before GitPython has even loaded.
"""

from __future__ import annotations

from pathlib import Path


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
        return "bare = true" in (p / "config").read_text(errors="replace")
    except OSError:
        return False
