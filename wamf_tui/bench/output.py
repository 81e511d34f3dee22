"""What the trial reads in the job's output: lines made safe for the terminal, a throughput the job prints,
the likely cause of a failure, and where step times settle."""

from __future__ import annotations

import re
import statistics
from collections.abc import Iterable

from ..infra.visible import visible

_SGR = re.compile(r"(\x1b\[[0-9;]*m)")
_RATE = re.compile(r"(\d[\d.,]*(?:e\d+)?)\s*(samples|tokens|tok)/s(?:ec)?\b|"
                   r"(samples|tokens)[_ ]per[_ ]second['\"]?\s*[:=]\s*(\d[\d.]*(?:e\d+)?)", re.I)
_OTHER_ESCAPES = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")
CAUSES: tuple[tuple[str, str], ...] = (  # (pattern in the output, the likely cause); the first that matches
    (r"the activate line failed", "the activate line failed: is the environment still there?"),
    (r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'",
     "a module is missing in this environment: {0} (is the activate line right?)"),
    (r"CUDA out of memory|OutOfMemoryError", "CUDA ran out of memory: a smaller per-GPU batch, or free GPUs"),
    (r"UploadStopped: wamf-tui trial: (\w+) stopped", "the job uploads to the Hub ({0}), which a trial stops: switch "
     "its upload off in the run line"),
    (r"KeyError: '(LOCAL_RANK|RANK|WORLD_SIZE|MASTER_ADDR|MASTER_PORT)'|environment variable (\w+) expected",
     "a rank variable is missing ({0}): start it with torchrun"),
    (r"arguments are required: (.+)", "required arguments are missing: {0}"),
    (r"unrecognized arguments: (.+)", "the job does not know these arguments: {0}"),
    (r"ValueError: Some (?:specified arguments|keys) are not used by the HfArgumentParser: (.+)",
     "the job's dataclasses have no field for these: {0}"),
    (r"ERROR: Could not consume arguments: (.+)", "the job's function does not take these arguments: {0}"),
    (r"ERROR: (The function received no value for the required argument: .+|Missing required flags: .+)",
     "fire says: {0}"),
    (r"Could not override '([^']+)'|Key '([^']+)' is not in struct", "Hydra's config has no key {0}: prefix it with "
     "+ to add it, or fix its name"),
    (r"No such file or directory: '([^']+)'|can't open file '([^']+)'|FileNotFoundError: (.+)",
     "a file or dataset is missing: {0}"),
    (r"([\w./-]+): command not found|([\w./-]+): not found", "not on PATH: {0}"),
)
def terminal_safe(line: str) -> str:
    """A line of the job's output with its colours kept and every other escape shown, not obeyed
    (a job's output can carry OSC 52 as well as a commit subject can)."""
    line = _OTHER_ESCAPES.sub(lambda m: m.group(0) if _SGR.fullmatch(m.group(0)) else visible(m.group(0)), line)
    return "".join(part if _SGR.fullmatch(part) else visible(part) for part in _SGR.split(line))


def plain(line: str) -> str:
    return _SGR.sub("", line)


def throughput(line: str) -> str:
    """A rate of samples or tokens the job printed (`123.4 samples/s`, `tokens_per_second=5e3`), or ""."""
    if "/s" not in line and "per_s" not in line and "per s" not in line:
        return ""
    m = _RATE.search(line)
    if m is None:
        return ""
    value, unit = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
    return f"{value} {'tokens' if unit.lower().startswith('tok') else 'samples'}/s"


def likely_cause(lines: Iterable[str]) -> str:
    text = "\n".join(plain(x) for x in lines)
    for pattern, cause in CAUSES:
        m = re.search(pattern, text)
        if m:
            found = next((g for g in m.groups() if g), "")
            return cause.format(found.strip()[:120])
    return ""


def steady(times: list[float]) -> tuple[int | None, float | None]:
    """(warm-up steps, median step time after them) from the steps' end times. The first step is
    always warm-up (its start is not seen); the steps slower than 1.5x the second half's median
    that follow it are warm-up too (compilation, autotuning, allocator growth)."""
    if len(times) < 3:
        return (None, None)
    between = gaps(times)
    late = statistics.median(between[len(between) // 2:])
    slow = 0
    while slow < len(between) - 1 and between[slow] > 1.5 * late:
        slow += 1
    return (1 + slow, statistics.median(between[slow:]))


def gaps(times: list[float]) -> list[float]:
    """Each step's duration, from consecutive end times."""
    return [b - a for a, b in zip(times, times[1:], strict=False)]
