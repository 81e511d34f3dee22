"""Every detector at once (`detect`, the app's detection child): each subject's facts as soon as known."""

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
from . import SUBJECTS
from .environment import detect_environment
from .hardware import detect_hardware
from .project import find_recorder, find_test_command
from .repo import detect_repo
from .scripts import scan_scripts, tracked_files
from .slurm import queued_jobs


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
