"""Reading the repo's files: regular files only, and never more than asked for.

A FIFO named `Makefile` or `train.py` blocks an `open` forever, and a link to `/dev/zero` never
ends; both are a hostile repo's easiest way to hang detection. Every read of a repo file goes here.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path


def read_regular(path: Path, limit: int) -> bytes:
    """At most `limit` bytes of a regular file. Raises OSError for anything else (FIFO, device, folder)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, a device or a folder)")
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class TooLarge(ValueError):
    """A file over the size a contract, template or answers file can have."""


def read_text(path: Path, limit: int) -> str:
    """A regular UTF-8 text file of at most `limit` bytes (a BOM is fine). Raises OSError (unreadable,
    not a regular file), TooLarge, or UnicodeDecodeError."""
    raw = read_regular(path, limit + 1)
    if len(raw) > limit:
        raise TooLarge(f"{path} is over {limit // 1024} KiB")
    return raw.decode("utf-8-sig")


def digest(path: Path, limit: int = 16 * 1024 * 1024) -> str:
    """A short digest of a regular file's first `limit` bytes ("" when unreadable): enough to tell
    that a script changed between two sessions."""
    import hashlib

    try:
        return hashlib.sha256(read_regular(path, limit)).hexdigest()[:16]
    except OSError:
        return ""


def write_atomic(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """The one writer of the app's files. Via a temp file in the same folder and a rename: a failed write
    leaves the old file intact. Never through a symlink (it would replace the link, or write where the
    link points); the file's mode is kept, or `mode`, or 0644 for a new file."""
    if path.is_symlink():
        raise OSError(errno.ELOOP, f"{path.name} is a symlink; name another path")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        if mode is None:
            mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def rel_path(path: Path, root: Path) -> str:
    """`path` from `root` (both resolved), as written when it lies outside."""
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
