"""What a resumed session tells the user: the facts that moved since it was saved."""

from __future__ import annotations

from ..model import Detected, HardwareFacts, RepoFacts


def what_changed(old: Detected, subject: str, new: object) -> list[str]:
    """Facts that moved since a saved session, in one line each, for the user resuming it."""
    lines: list[str] = []
    if subject == "repo" and old.repo is not None and isinstance(new, RepoFacts):
        if old.repo.sha and new.sha and old.repo.sha != new.sha:
            lines.append(f"HEAD moved since last time: {old.repo.sha} -> {new.sha} ({new.subject or ''})".rstrip())
        if old.repo.branch != new.branch and new.branch:
            lines.append(f"branch is now {new.branch} (was {old.repo.branch or 'detached'})")
        if new.dirty and not old.repo.dirty:
            lines.append("the checkout became dirty: " + ", ".join((new.modified + new.staged + new.untracked)[:3]))
        elif old.repo.dirty and not new.dirty:
            lines.append("the checkout is clean now")
    if subject == "hardware" and old.hardware is not None and isinstance(new, HardwareFacts):
        was_free = {g.index for g in old.hardware.gpus if g.free}
        now_busy = [g for g in new.gpus if not g.free and g.index in was_free]
        if now_busy:
            users = sorted({p.user or f"pid {p.pid}" for g in now_busy for p in g.processes}) or ["unknown"]
            lines.append(f"GPU {','.join(str(g.index) for g in now_busy)} became busy ({', '.join(users)})")
    return lines
