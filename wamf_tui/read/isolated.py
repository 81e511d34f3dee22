"""The analysis in a child process, for the app.

`ast.parse` holds the GIL for the whole parse: a few milliseconds for a usual
script, seconds for a 40,000-line one. In a thread of the app that would freeze
the screen; in a child it costs the screen nothing, the child's syntax trees
never count against the app's memory, and quitting can stop it at once.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..infra import children
from ..model import Analysis

TIMEOUT_S = 120


class AnalysisFailed(RuntimeError):
    """The child could not read the script; the message is one short line for the user."""


def analyze_in_child(script: Path, repo_root: str | Path, command: Sequence[str] = (),
                     called: tuple[str, str] | None = None, timeout: float = TIMEOUT_S,
                     installed: Mapping[str, str] | None = None) -> Analysis:
    """`command`, `called`, `installed`: as `analyze_script` takes them."""
    try:
        proc = children.run(timeout=timeout, **children.wamf_tui(
            "analyze", str(script.resolve()), "--repo", str(Path(repo_root).resolve()), "--json",
            *(f"--arg={w}" for w in command), *([f"--called={called[0]}:{called[1]}"] if called else []),
            *(f"--installed={n}={v}" for n, v in (installed or {}).items())))
    except OSError as e:
        raise AnalysisFailed(f"could not start the reader: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        raise AnalysisFailed(f"reading {script.name} took over {timeout:g} s; stopped") from None
    if proc.returncode < 0:
        raise AnalysisFailed(f"reading {script.name} was stopped")
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines()
        raise AnalysisFailed(lines[-1] if lines else f"the reader exited with status {proc.returncode}")
    try:
        return Analysis.model_validate_json(proc.stdout)
    except ValueError:
        raise AnalysisFailed("the reader's answer was not readable") from None

