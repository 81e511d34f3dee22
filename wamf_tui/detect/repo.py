"""The git checkout: where it is, what HEAD is, and whether it is clean.

Read-only, and running nothing of the repo's: every git command takes its settings and environment
from `gitcmd` (no fsmonitor, filter, hook or pager; GIT_OPTIONAL_LOCKS=0 so not even `git status`
refreshes the index).
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import gitcmd
from ..checkout import is_bare, status_entries
from ..files import read_text
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


def detect_repo(path: str | os.PathLike[str]) -> RepoFacts:
    """Facts about the checkout containing `path`; never raises."""
    import git  # GitPython: imported here so `wamf-tui check` never pays for it

    p = Path(path).expanduser().resolve()
    facts = RepoFacts(path=str(p))
    try:
        repo = git.Repo(p, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return facts
    except Exception as e:  # unreadable .git, odd permissions
        facts.error = f"could not read the repository: {e.__class__.__name__}"
        return facts
    try:
        repo.git.set_persistent_git_options(c=gitcmd.settings(str(repo.working_tree_dir or repo.git_dir)))
    except gitcmd.Refused as e:
        facts.error = str(e)
        return facts
    repo.git.update_environment(**gitcmd.SAFE_ENV)
    facts.is_git = True
    facts.bare = repo.bare
    facts.root = str(Path(repo.working_tree_dir or repo.git_dir).resolve())
    try:
        _read_head(repo, facts)
        if not repo.bare:
            _read_status(repo, facts)
            _read_extras(repo, facts)
    except git.GitCommandError as e:
        facts.error = f"git failed: {(e.stderr or str(e)).strip().splitlines()[-1][:200]}"
    except Exception as e:
        facts.error = f"could not read the repository: {e.__class__.__name__}: {str(e)[:200]}"
    finally:
        repo.close()  # ends any git process GitPython keeps open (reading submodules can start one)
    return facts


def _read_head(repo, facts: RepoFacts) -> None:
    """HEAD from the ref files and one `git log`: GitPython's object database would start two
    persistent `git cat-file` processes just for the subject line."""
    from git.refs.symbolic import SymbolicReference

    facts.detached = repo.head.is_detached
    if not facts.detached:
        facts.branch = repo.head.reference.name
    try:
        SymbolicReference.dereference_recursive(repo, "HEAD")
    except ValueError:  # the branch has no commit yet
        facts.no_commits = True
        return
    sha, _, subject = repo.git.log("-1", "--format=%H%x00%s", kill_after_timeout=GIT_TIMEOUT_S).partition("\0")
    facts.sha, facts.subject = sha[:7], subject
    if not facts.detached:
        tracking = repo.head.reference.tracking_branch()
        facts.upstream = tracking.name if tracking is not None else None
    if repo.remotes:
        try:
            facts.remote_url = repo.remotes[0].url  # from the config; `.urls` would run `git remote`
        except Exception:
            facts.remote_url = None


def _read_status(repo, facts: RepoFacts) -> None:
    out = repo.git.status("--porcelain=v1", "-z", "--untracked-files=normal", kill_after_timeout=GIT_TIMEOUT_S)
    for xy, name in status_entries(out):
        x, y = xy[0], xy[1]
        if x == "?":
            facts.untracked.append(name)
            continue
        if x not in " !":
            facts.staged.append(name)
        if y not in " !":
            facts.modified.append(name)


def _read_extras(repo, facts: RepoFacts) -> None:
    gitdir = Path(repo.git_dir)
    facts.operation = next((op for name, op in _OPERATIONS if (gitdir / name).exists()), None)
    if (Path(facts.root or "") / ".gitmodules").exists():
        try:
            facts.submodules = [s.path for s in repo.submodules]
        except Exception:
            facts.submodules = ["(unreadable .gitmodules)"]
    facts.worktrees = [str(t) for t in _worktrees(Path(repo.common_dir).resolve()) if t != Path(facts.root or "")]


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
