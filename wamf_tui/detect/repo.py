"""The git checkout: where it is, what HEAD is, and whether it is clean.

Read-only, and running nothing of the repo's: every git command takes its settings and environment
from `gitcmd` (no fsmonitor, filter, hook or pager; GIT_OPTIONAL_LOCKS=0 so not even `git status`
refreshes the index). A handful of plain git calls, no library: importing one cost `detect` more
than all its git calls together.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ..infra import children, gitcmd
from ..infra.checkout import find_root, is_bare, status_entries
from ..infra.files import read_text
from ..model import RepoFacts

_OPERATIONS = (
    ("rebase-merge", "rebase"),
    ("rebase-apply", "rebase"),
    ("MERGE_HEAD", "merge"),
    ("CHERRY_PICK_HEAD", "cherry-pick"),
    ("REVERT_HEAD", "revert"),
    ("BISECT_LOG", "bisect"),
)
GIT_TIMEOUT_S = 10


class _Failed(RuntimeError):
    """A git call that exited non-zero; the message is its last line on stderr."""


class _Git:
    """git in one folder, with the settings that switch off what the repo's configuration would run."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.using = gitcmd.settings(where)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return children.run(gitcmd.argv(self.where, *args, using=self.using), GIT_TIMEOUT_S, env=gitcmd.env(),
                            encoding="utf-8", errors="replace")

    def out(self, *args: str) -> str:
        done = self.run(*args)
        if done.returncode != 0:
            lines = (done.stderr or "").strip().splitlines()
            raise _Failed(lines[-1][:200] if lines else f"git {args[0]} exited {done.returncode}")
        return done.stdout


def detect_repo(path: str | os.PathLike[str]) -> RepoFacts:
    """Facts about the checkout containing `path`; never raises."""
    p = Path(path).expanduser().resolve()
    facts = RepoFacts(path=str(p))
    if not p.is_dir():
        return facts
    try:
        g = _Git(p)
        found = g.run("rev-parse", "--is-bare-repository", "--is-inside-git-dir", "--absolute-git-dir",
                      "--git-common-dir", "--show-cdup")
    except gitcmd.Refused as e:
        facts.error = str(e)
        return facts
    except (OSError, subprocess.TimeoutExpired) as e:
        facts.error = f"could not read the repository: {e.__class__.__name__}"
        return facts
    if found.returncode != 0:
        if "not a git repository" not in found.stderr:  # unreadable .git, a checkout owned by another user
            facts.error = f"could not read the repository: {found.stderr.strip().splitlines()[-1][:200]}"
        return facts
    bare, inside, gitdir, common, cdup = [*found.stdout.split("\n"), "", "", "", "", ""][:5]
    if inside == "true" and bare != "true" and find_root(p) != p:  # started inside `.git`: the checkout above
        return detect_repo(find_root(p)).model_copy(update={"path": str(p)})
    facts.is_git = True
    facts.bare = bare == "true"
    facts.root = gitdir if facts.bare else str((p / cdup).resolve())
    try:
        _read_head(g, Path(gitdir), facts)
        if not facts.bare:
            _read_status(g, facts)
            _read_extras(g, Path(gitdir), (p / common).resolve(), facts)
    except _Failed as e:
        facts.error = f"git failed: {e}"
    except Exception as e:
        facts.error = f"could not read the repository: {e.__class__.__name__}: {str(e)[:200]}"
    return facts


def _read_head(g: _Git, gitdir: Path, facts: RepoFacts) -> None:
    """The branch from the HEAD file (as git writes it: `ref: refs/heads/NAME`), the commit and its
    subject from one `git log`; the upstream and the first remote's URL from the refs and the config."""
    head = read_text(gitdir / "HEAD", 4096).strip()
    ref = head[len("ref: "):] if head.startswith("ref: ") else None
    facts.detached = ref is None
    if ref is not None:
        facts.branch = ref.removeprefix("refs/heads/")
    logged = g.run("log", "-1", "--format=%H%x00%s", "--")
    if logged.returncode != 0:
        if g.run("rev-parse", "-q", "--verify", "HEAD").returncode != 0:  # the branch has no commit yet
            facts.no_commits = True
            return
        g.out("log", "-1", "--format=%H%x00%s", "--")  # raises with git's own words
    sha, _, subject = logged.stdout.rstrip("\n").partition("\0")
    facts.sha, facts.subject = sha[:7], subject
    if ref is not None:
        facts.upstream = g.out("for-each-ref", "--format=%(upstream:short)", ref).strip() or None
    urls = g.run("config", "-z", "--get-regexp", r"^remote\..*\.url$").stdout  # "name\nvalue\0" each, in order
    facts.remote_url = next((e.partition("\n")[2] for e in urls.split("\0") if e), None)


def _read_status(g: _Git, facts: RepoFacts) -> None:
    out = g.out("status", "--porcelain=v1", "-z", "--untracked-files=normal")
    for xy, name in status_entries(out):
        x, y = xy[0], xy[1]
        if x == "?":
            facts.untracked.append(name)
            continue
        if x not in " !":
            facts.staged.append(name)
        if y not in " !":
            facts.modified.append(name)


def _read_extras(g: _Git, gitdir: Path, common: Path, facts: RepoFacts) -> None:
    facts.operation = next((op for name, op in _OPERATIONS if (gitdir / name).exists()), None)
    modules = Path(facts.root or "") / ".gitmodules"
    if modules.exists():
        listed = g.run("config", "-z", "--file", str(modules), "--get-regexp", r"^submodule\..*\.path$")
        if listed.returncode in (0, 1):  # 1: no submodule has a path
            facts.submodules = [e.partition("\n")[2] for e in listed.stdout.split("\0") if e]
        else:
            facts.submodules = ["(unreadable .gitmodules)"]
    facts.worktrees = [str(t) for t in _worktrees(common) if t != Path(facts.root or "")]


def _worktrees(common: Path) -> list[Path]:
    """Every worktree of the repository, read from `.git/worktrees/*/gitdir` as `git worktree
    list` does, without starting it: the main checkout first, then the linked ones."""
    trees = [] if is_bare(common) else [common.parent.resolve()]
    try:
        linked = sorted((common / "worktrees").iterdir())
    except OSError:
        return trees
    for d in linked:
        try:
            trees.append(Path(read_text(d / "gitdir", 4096).strip()).parent.resolve())
        except (OSError, ValueError):  # not a regular file, too large, not UTF-8
            continue
    return trees
