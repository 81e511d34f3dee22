"""The detected facts as the pane and `detect` show them: (label, text) rows."""

from __future__ import annotations

from ..model import Detected
from .hardware import verdict


def _some(items: list[str], n: int) -> str:
    """The first `n`, and an ellipsis when there are more: a list is never cut silently."""
    return ", ".join(items[:n]) + (", …" if len(items) > n else "")


def describe(d: Detected, chosen: str = "") -> list[tuple[str, str]]:
    """(label, text) rows for the detected pane and `wamf-tui detect`; `chosen`, the job script the
    user picked, leads the script rows."""
    rows: list[tuple[str, str]] = []
    r = d.repo
    if r is not None:
        if not r.is_git:
            rows.append(("repo", f"{r.path}: not a git repository" + (f" ({r.error})" if r.error else "")))
        else:
            at = f" @ {r.sha}" if r.sha else " (commit unreadable)"  # git failed: the cause is said below
            head = "no commits yet" if r.no_commits else (f"detached{at}" if r.detached else f"{r.branch}{at}")
            rows.append(("repo", head))  # first: a long path must not push the branch onto the next line
            rows.append(("", str(r.root)))
            if r.subject:
                rows.append(("", r.subject if len(r.subject) <= 60 else r.subject[:59] + "…"))
            state = "clean" if not r.dirty else (
                f"dirty: {len(r.modified)} modified, {len(r.staged)} staged, {len(r.untracked)} untracked")
            rows.append(("", state + (f"; {r.operation} in progress" if r.operation else "")))
            if r.upstream:
                rows.append(("", f"upstream {r.upstream}"))
            if r.submodules:
                rows.append(("", f"submodules: {_some(r.submodules, 4)}"))
            if r.worktrees:
                rows.append(("", f"{len(r.worktrees)} other worktree(s)"))
            if r.error:
                rows.append(("", r.error))
    e = d.env
    if e is not None:
        rows.append(("env", f"{e.kind}{' ' + e.name if e.name else ''}"
                     + (f"  python {e.python_version}" if e.python_version else "")))
        if e.torch:
            rows.append(("", f"torch {e.torch}" + (f" (CUDA {e.torch_cuda})" if e.torch_cuda else " (CPU build)")))
        libs = [f"{p.name} {p.version}" for p in e.packages if p.name != "torch"]
        if libs:
            rows.append(("", _some(libs, 6)))
        for note in e.notes:
            rows.append(("", note))
        if e.error:
            rows.append(("", e.error))
    h = d.hardware
    if h is not None:
        rows.append(("node", h.host))
        rows.append(("", f"{h.cpu_cores} cores, {h.ram_gib} GiB RAM, load {h.load}"))
        if h.slurm:
            rows.append(("", "slurm " + ", ".join(f"{k} {v}" for k, v in h.slurm.items())))
        if h.gpus:
            rows.append(("gpu", f"driver {h.driver}, CUDA {h.cuda_driver}"))
            for g in h.gpus:
                if g.free:
                    state = "free"
                elif g.processes:
                    state = "busy: " + ", ".join(p.user or f"pid {p.pid}" for p in g.processes)
                else:
                    state = "busy (memory in use)"
                rows.append(("", f"{g.index} {g.name} {g.memory_used_mib // 1024}/{g.memory_total_mib // 1024}G"
                             f" {g.utilization if g.utilization is not None else '?'}%"
                             f"{' MIG' if g.mig else ''}  {state}"))
        rows.append(("", verdict(h)))
    s = d.scripts
    if s is not None:
        first = [c for c in s.candidates if c.path == chosen]
        shown = (first + [c for c in s.candidates if c.path != chosen])[:3]
        for i, c in enumerate(shown):
            mark = "  (chosen)" if first and i == 0 else ""
            rows.append(("script" if i == 0 else "",
                         f"{c.path}" + (f"  ({c.launch.launcher})" if c.launch else "") + mark))
        if len(s.candidates) > 3:
            rows.append(("", f"{len(s.candidates) - 3} more in the job question"))
        if not s.candidates:
            rows.append(("script", "no job script found"))
        if s.stopped_early:
            rows.append(("", s.stopped_early))
    if d.tests:
        rows.append(("tests", d.tests))
    if d.recorder:
        rows.append(("recorder", d.recorder.split(" (")[0]))
    return rows
