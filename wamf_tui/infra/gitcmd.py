"""The one way wamf-tui runs git: reading a repository must run nothing its configuration names.

A repository's `.git/config` can name programs git starts on its own: `core.fsmonitor` (run by
`status` and `ls-files` on every index read), clean/smudge/process filter drivers (run by `status` to
compare a file whose stat changed), hooks (`post-index-change`), a pager, and `gpg.program` when
`log.showSignature` is on. A repo handed over as a tarball, or a checkout on a shared disk, carries
that file. Every git call the app makes takes its settings and environment from here, which switch
all of them off, and `GIT_OPTIONAL_LOCKS=0` keeps reading from rewriting `.git/index`. No call diffs
(so no external diff or textconv driver can start); one that ever does must add `--no-ext-diff
--no-textconv`.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# Settings that start a program, switched off for every call (a `-c` value wins over the config files).
OFF = (
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "log.showSignature=false",
    "status.submoduleSummary=false",
)
# Each filter driver the configuration defines gets its commands emptied (git runs a filter's command only
# when it is not empty) and is no longer required (a required filter with no command fails the call).
_FILTER_KEYS = r"^filter\..+\.(clean|smudge|process|required)$"
TIMEOUT_S = 10


class Refused(RuntimeError):
    """A configuration git cannot be told to ignore (a filter whose name holds `=` or a line break)."""


def env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for git, built anew (no GIT_DIR, GIT_EXTERNAL_DIFF or askpass of the caller's):
    never prompts, never takes the index lock, no pager; HOME stays (the user's `safe.directory`)."""
    out = {"PATH": os.environ.get("PATH") or "/usr/bin:/bin:/usr/local/bin"}
    for name in ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "XDG_CONFIG_HOME", "TMPDIR"):
        if os.environ.get(name):
            out[name] = os.environ[name]
    out.update(extra or {})
    out.update(SAFE_ENV)
    return out


SAFE_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat"}


def settings(root: str | Path | None) -> list[str]:
    """The `name=value` settings that switch off everything in the configuration that runs a program:
    the fixed set, and each filter driver the configuration of `root` defines, emptied."""
    out = list(OFF)
    if root is None:
        return out
    try:
        found = subprocess.run(
            ["git", *_c(out), "-C", str(root), "config", "-z", "--name-only", "--get-regexp", _FILTER_KEYS],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=TIMEOUT_S, env=env())
    except (OSError, subprocess.TimeoutExpired):
        return out
    for name in dict.fromkeys(found.stdout.decode("utf-8", "surrogateescape").split("\0")):
        if not name:
            continue
        if "=" in name or "\n" in name:
            raise Refused(f"the repository's git configuration names a filter git cannot be told to skip: {name!r}")
        out.append(f"{name}=false" if name.endswith(".required") else f"{name}=")
    return out


def _c(kvs: list[str]) -> list[str]:
    return [opt for kv in kvs for opt in ("-c", kv)]


def argv(root: str | Path, *args: str, using: list[str] | None = None) -> list[str]:
    """`git -C root <args>` with every program the configuration names switched off; `using`, the
    `settings(root)` already read, spares one `git config` per call where one reader makes several."""
    return ["git", "--no-pager", *_c(settings(root) if using is None else using), "-C", str(root), *args]
