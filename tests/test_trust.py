"""Issue #34, trust: a hostile repository, a second instance or a strange file cannot take over, hang,
or lose anything. Each attack is made with real files, a real git repository, real processes.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from conftest import git, make_repo

from wamf_tui.detect.repo import detect_repo
from wamf_tui.detect.scripts import tracked_files
from wamf_tui.trial import touched_snapshot

# --- 4. git runs nothing the repository's configuration names ----------------------------------------


def _program(path: Path, marker: Path, what: str) -> Path:
    """A program that leaves `what` in the marker file when it runs (and passes its input through)."""
    path.write_text(f"#!/bin/sh\necho {what} >> {marker}\ncat\n")
    path.chmod(0o755)
    return path


def planted_repo(tmp_path: Path, marker: Path) -> Path:
    """A committed repo whose .git/config runs a program in every way git allows on reading: the
    fsmonitor hook, a clean/smudge filter every file uses (required), a post-index-change hook in
    both hook places, a pager, and gpg for a signed HEAD that `log.showSignature` would verify."""
    root = make_repo(tmp_path / "job", {"train.py": "import torch\n", "data.txt": "x\n"})
    # a signed commit on top: git log with showSignature starts gpg.program to check it
    tree = git(root, "rev-parse", "HEAD^{tree}").strip()
    parent = git(root, "rev-parse", "HEAD").strip()
    body = (f"tree {tree}\nparent {parent}\nauthor t <t@localhost> 1700000000 +0000\n"
            "committer t <t@localhost> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n"
            " iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n")
    sha = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=root, input=body,
                         capture_output=True, text=True, check=True).stdout.strip()
    git(root, "update-ref", "refs/heads/main", sha)
    bin_ = tmp_path / "bin"
    hooks = tmp_path / "hooks"
    for folder in (bin_, hooks):
        folder.mkdir()
    for folder in (hooks, root / ".git" / "hooks"):
        for hook in ("post-index-change", "post-checkout", "reference-transaction"):
            _program(folder / hook, marker, f"hook-{hook}")
    p = {what: _program(bin_ / what, marker, what) for what in ("fsmonitor", "clean", "smudge", "gpg", "pager")}
    (root / ".gitattributes").write_text("* filter=evil\n")
    with (root / ".git" / "config").open("a") as f:
        f.write(f'[core]\n\tfsmonitor = {p["fsmonitor"]}\n\thooksPath = {hooks}\n\tpager = {p["pager"]}\n'
                f'[filter "evil"]\n\tclean = {p["clean"]}\n\tsmudge = {p["smudge"]}\n\trequired = true\n'
                f'[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {p["gpg"]}\n')
    # stat no longer matches the index: status hashes the file again, through the clean filter
    os.utime(root / "data.txt", (1_800_000_000, 1_800_000_000))
    os.utime(root / "train.py", (1_800_000_000, 1_800_000_000))
    return root


def test_git_runs_nothing_the_repositorys_configuration_names(tmp_path):
    marker = tmp_path / "ran"
    root = planted_repo(tmp_path, marker)
    # the attack is real: plain git with this config runs the planted programs
    subprocess.run(["git", "status"], cwd=root, capture_output=True, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    subprocess.run(["git", "log", "-1"], cwd=root, capture_output=True)
    assert marker.exists() and {"fsmonitor", "clean", "gpg"} <= set(marker.read_text().split())
    marker.unlink()

    facts = detect_repo(root)
    files = tracked_files(root)
    snapshot = touched_snapshot(root)

    assert not marker.exists(), marker.read_text()
    assert facts.error is None and facts.subject == "signed"
    assert set(facts.untracked) == {".gitattributes"} and facts.modified == []
    assert {"train.py", "data.txt", ".gitattributes"} <= set(files)
    assert snapshot is not None and set(snapshot) == {".gitattributes"}
