"""The app's own files in the checkout, listed in `.git/info/exclude` when the user asks (git is not run)."""

from __future__ import annotations

from pathlib import Path

from ..infra.files import read_text, write_atomic
from ..model import InitState

SMALL = 4096  # `.git` as a file, `commondir`: one line


def own_files(state: InitState) -> list[str]:
    """The app's files inside the checkout, relative to its root (for .git/info/exclude)."""
    from ..propose.run_line import needs_wrapper, wrapper_path

    root = Path(state.repo_path)
    paths = [Path(state.contract_path), Path(state.contract_path + ".bak")]
    if needs_wrapper(state.changes):
        paths.append(Path(wrapper_path(state)))
    out = []
    for p in paths:
        try:
            out.append(str(p.resolve().relative_to(root.resolve())))
        except ValueError:
            continue
    return out


def _common_git_dir(root: Path) -> Path | None:
    """Where git reads `info/exclude` for this checkout: `.git`, or for a linked worktree (`.git` is a
    file naming its own git dir) the repository's common dir, which every worktree shares. Read from
    the files, as git itself does; git is not run."""
    dot = root / ".git"
    if dot.is_dir():
        return dot
    try:
        line = read_text(dot, SMALL).strip()
    except (OSError, ValueError):  # not a regular file, too large, not UTF-8
        return None
    if not line.startswith("gitdir:"):
        return None
    own = Path(line[len("gitdir:"):].strip())
    own = own if own.is_absolute() else (root / own).resolve()
    try:
        common = read_text(own / "commondir", SMALL).strip()
    except (OSError, ValueError):
        return own
    return (own / common).resolve() if not Path(common).is_absolute() else Path(common)


def add_to_exclude(state: InitState) -> str:
    """Append the app's own files to .git/info/exclude, once each. Only on the user's say-so."""
    git_dir = _common_git_dir(Path(state.repo_path))
    if git_dir is None:
        return "no .git folder here; nothing to exclude"
    exclude = git_dir / "info" / "exclude"
    try:
        old = read_text(exclude, 1 << 20) if exclude.exists() else ""
        lines = set(old.splitlines())
        new = [f"/{p}" for p in own_files(state) if f"/{p}" not in lines]
        if new:
            exclude.parent.mkdir(parents=True, exist_ok=True)
            sep = "" if not old or old.endswith("\n") else "\n"
            write_atomic(exclude, old + sep + "# wamf-tui\n" + "\n".join(new) + "\n")
    except (OSError, ValueError) as e:
        return f"could not update {exclude}: {getattr(e, 'strerror', None) or e}"
    return f"listed in .git/info/exclude: {', '.join(new) or 'already there'}"
