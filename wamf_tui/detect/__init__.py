"""Detection: plain functions, one module per subject, each returning a model.

Nothing here imports Textual or torch; the UI runs these in thread workers.
"""

from __future__ import annotations

from pathlib import Path

from ..checkout import find_root
from ..model import Detected
from .environment import detect_environment
from .hardware import detect_hardware, verdict
from .project import find_recorder, find_test_command
from .repo import detect_repo
from .scripts import scan_scripts, tracked_files


def detect_all(path: str | Path) -> Detected:
    """Everything at once. The root comes from the file system, so git, the interpreter probe
    and NVML overlap in threads with the file scan instead of waiting for GitPython to load."""
    from concurrent.futures import ThreadPoolExecutor

    root = find_root(path)
    with ThreadPoolExecutor(max_workers=3) as pool:
        repo = pool.submit(detect_repo, path)
        env = pool.submit(detect_environment, root)
        hardware = pool.submit(detect_hardware)
        files = tracked_files(root)
        scan = scan_scripts(root, files)
        return Detected(repo=repo.result(), env=env.result(), hardware=hardware.result(), scripts=scan,
                        recorder=find_recorder(root, files), tests=find_test_command(root))


def describe(d: Detected) -> list[tuple[str, str]]:
    """(label, text) rows for the detected pane and `wamf-tui detect`."""
    rows: list[tuple[str, str]] = []
    r = d.repo
    if r is not None:
        if not r.is_git:
            rows.append(("repo", f"{r.path}: not a git repository" + (f" ({r.error})" if r.error else "")))
        else:
            head = "no commits yet" if r.no_commits else (
                f"detached @ {r.sha}" if r.detached else f"{r.branch} @ {r.sha}")
            rows.append(("repo", f"{r.root}  {head}"))
            if r.subject:
                rows.append(("", r.subject[:60]))
            state = "clean" if not r.dirty else (
                f"dirty: {len(r.modified)} modified, {len(r.staged)} staged, {len(r.untracked)} untracked")
            rows.append(("", state + (f"; {r.operation} in progress" if r.operation else "")))
            if r.upstream:
                rows.append(("", f"upstream {r.upstream}"))
            if r.submodules:
                rows.append(("", f"submodules: {', '.join(r.submodules[:4])}"))
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
            rows.append(("", ", ".join(libs[:6])))
        for note in e.notes:
            rows.append(("", note))
        if e.error:
            rows.append(("", e.error))
    h = d.hardware
    if h is not None:
        rows.append(("node", f"{h.host}  {h.cpu_cores} cores, {h.ram_gib} GiB RAM, load {h.load}"))
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
        for i, c in enumerate(s.candidates[:3]):
            rows.append(("script" if i == 0 else "", f"{c.path}" + (f"  ({c.launch.launcher})" if c.launch else "")))
        if not s.candidates:
            rows.append(("script", "no job script found"))
        if s.stopped_early:
            rows.append(("", s.stopped_early))
    if d.tests:
        rows.append(("tests", d.tests))
    if d.recorder:
        rows.append(("recorder", d.recorder.split(" (")[0]))
    return rows
