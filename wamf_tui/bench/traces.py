"""What a trial run leaves to read once it ends: the probe's events, exit status and step times, and which
files of the checkout changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..infra.visible import visible
from ..model import Effect


def read_effects(path: Path, keep: int = 300) -> list[Effect]:
    """The probe's events, alike ones (every rank's, every step's save at one line) counted as one; a row
    line's hits stay one per step, which is what says it ran during training."""
    import json

    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    found: dict[tuple, Effect] = {}
    for raw in text.splitlines():
        try:
            event = json.loads(raw)
            effect = Effect(kind=event["kind"], what=str(event["what"]), where=str(event.get("where", "")),
                            step=int(event.get("step", 0)), path=str(event.get("path", "")),
                            stack=[str(x) for x in event.get("stack", [])][:8],
                            values={str(k): str(v) for k, v in dict(event.get("values", {})).items()},
                            extras=[str(x) for x in event.get("extras", [])],
                            mode=str(event.get("mode", event.get("device", ""))))
        except (ValueError, KeyError, TypeError):
            continue
        key = (effect.kind, effect.what, effect.where, effect.path, effect.mode,
               effect.step if effect.kind == "line" else None)
        if key in found:
            found[key].count += 1
        elif len(found) < keep:
            found[key] = effect
    return list(found.values())


def exit_status(status_file: Path) -> int | None:
    """The command's exit status as the supervisor wrote it (a signal as its negative, like Popen's)."""
    try:
        how, _, number = status_file.read_text().partition(" ")
        return int(number) if how == "exit" else -int(number)
    except (OSError, ValueError):
        return None


def step_times(steps_file: Path) -> list[float]:
    """The step end times of the process that stepped most (rank 0 or its twin; one clock for all)."""
    try:
        text = steps_file.read_text()
    except OSError:
        return []
    by_pid: dict[str, list[float]] = {}
    for line in text.splitlines():
        pid, _, t = line.partition(" ")
        try:
            by_pid.setdefault(pid, []).append(float(t))
        except ValueError:
            continue
    return max(by_pid.values(), key=len, default=[])


def touched_snapshot(repo: Path) -> dict[str, tuple[str, int, int]] | None:
    """git status of the checkout with each listed file's mtime and size; None outside git."""
    from ..infra import children, gitcmd
    from ..infra.checkout import status_entries

    try:
        out = children.run(gitcmd.argv(repo, "status", "--porcelain=v1", "-z", "--untracked-files=all"), timeout=30,
                           cwd=repo, env=gitcmd.env()).stdout
    except (OSError, subprocess.TimeoutExpired, gitcmd.Refused):
        return None
    seen: dict[str, tuple[str, int, int]] = {}
    for status, path in status_entries(out):
        try:
            st = (repo / path).stat()
            seen[path] = (status, st.st_mtime_ns, st.st_size)
        except OSError:
            seen[path] = (status, 0, 0)
    return seen


def touched(before: dict | None, after: dict | None) -> list[str]:
    """Files the run created or changed in the checkout (not git-ignored ones: those are the job's
    business, like the benchmark's own run folder)."""
    if before is None or after is None:
        return []
    return sorted(visible(path) for path, facts in after.items() if before.get(path) != facts)
