"""Detection: plain functions, one module per subject, each returning a model.

Nothing here imports Textual or torch. The app runs them in a child process (`isolated`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO

from ..infra.checkout import find_root
from ..infra.records import Record
from ..infra.visible import gated, visible
from ..model import Detected
from .environment import detect_environment
from .hardware import detect_hardware, verdict
from .project import find_recorder, find_test_command
from .repo import detect_repo
from .scripts import scan_scripts, tracked_files
from .slurm import queued_jobs

SUBJECTS = ("repo", "env", "hardware", "scripts", "tests", "recorder")  # the fields of `Detected`


def jobs(path: str | Path) -> dict[str, Callable[[], object]]:
    """One job per subject. The root comes from the file system, so the file scan need not wait
    for git; the tracked-file list is read once for the two jobs that use it."""
    root = find_root(path)
    listed: list[list[str]] = []
    lock = threading.Lock()

    def files() -> list[str]:
        with lock:
            if not listed:
                listed.append(tracked_files(root))
        return listed[0]

    return {
        "repo": lambda: detect_repo(path),
        "env": lambda: detect_environment(root),
        "hardware": detect_hardware,
        "scripts": lambda: scan_scripts(root, files(), queued_jobs(root)),
        "tests": lambda: find_test_command(root),
        "recorder": lambda: find_recorder(root, files()),
    }


def run_jobs(path: str | Path) -> Iterator[tuple[str, object]]:
    """(subject, facts) for every subject, each as soon as it is known: git and NVML wait on other
    processes, so the jobs run at once. A job that raises yields its error."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=len(SUBJECTS)) as pool:
        futures = {pool.submit(job): name for name, job in jobs(path).items()}
        for done in as_completed(futures):
            try:
                yield futures[done], _gate(done.result())
            except Exception as e:  # a detector bug: said for its subject, the others still come
                yield futures[done], e


def _gate(facts: object) -> object:
    """Facts past the gate for repo text (see `visible`): a model, or the plain text of a subject."""
    if isinstance(facts, Record):
        return gated(facts)
    return visible(facts) if isinstance(facts, str) else facts


def detect_all(path: str | Path) -> Detected:
    """Everything at once; a subject whose detector failed stays empty."""
    found = {name: facts for name, facts in run_jobs(path) if not isinstance(facts, Exception)}
    return Detected.model_validate(found)


def stream(path: str | Path, out: TextIO) -> None:
    """`detect --stream`: one JSON line per subject as soon as it is known, for the app's child."""
    for name, facts in run_jobs(path):
        line: dict[str, object]
        if isinstance(facts, Exception):
            line = {"subject": name, "error": visible(f"{facts.__class__.__name__}: {facts}")}
        else:
            line = {"subject": name, "facts": facts.model_dump(mode="json") if isinstance(facts, Record) else facts}
        out.write(json.dumps(line) + "\n")
        out.flush()


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
