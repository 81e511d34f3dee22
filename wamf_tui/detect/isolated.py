"""Detection in a child process, for the app.

Detection is mostly waiting on git and NVML, but between the waits it
loads nvidia-ml-py and scans thousands of files, and in the app's
process every bit of that held the GIL while a key waited. The child (`wamf-tui detect
--stream`) prints each subject's facts as one JSON line as soon as it knows them; the app
reads them in a thread and only validates them. Quitting or a re-scan kills the child, with
the git it started.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from ..infra import children
from ..model import Detected
from . import SUBJECTS

TIMEOUT_S = 60  # every detector has its own, shorter bound; this one is for a child that hangs whole


class DetectionFailed(RuntimeError):
    """A subject the child could not tell; the message is one short line for the user."""


class ChildDetection:
    """Start `wamf-tui detect --stream PATH`; iterate for (subject, facts or DetectionFailed)."""

    def __init__(self, path: str | Path, timeout: float = TIMEOUT_S) -> None:
        self.timeout = timeout
        command = children.wamf_tui("detect", str(Path(path).resolve()), "--stream")
        self.lines = children.Lines(timeout=timeout, **command)

    def __iter__(self) -> Iterator[tuple[str, object]]:
        told: set[str] = set()
        for line in self.lines:
            subject, facts = parse_line(line)
            if subject in SUBJECTS and subject not in told:
                told.add(subject)
                yield subject, facts
        if self.lines.expired:
            why = f"detection did not finish within {self.timeout:g} s; stopped"
        elif self.lines.proc.returncode is not None and self.lines.proc.returncode < 0:
            why = "detection was stopped"
        else:
            why = f"detection stopped: {self.lines.error_line or 'no answer'}"
        for subject in SUBJECTS:
            if subject not in told:
                yield subject, DetectionFailed(why)

    def stop(self) -> None:
        self.lines.stop()


def parse_line(line: str) -> tuple[str, object]:
    """One line of `detect --stream` into (subject, model); what cannot be read, as DetectionFailed."""
    try:
        data = json.loads(line)
        subject = data["subject"]
    except (ValueError, KeyError, TypeError):
        return "", DetectionFailed("an unreadable line from the detection")
    if "error" in data:
        return subject, DetectionFailed(str(data["error"]))
    try:
        return subject, getattr(Detected.model_validate({subject: data.get("facts")}), subject)
    except (ValueError, AttributeError):
        return subject, DetectionFailed(f"the detection's {subject} facts were not readable")
