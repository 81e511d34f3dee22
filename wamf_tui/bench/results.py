"""A trial's result in words: the lines the app and `try` show, the contract's **Trial** rows, and the hash
that ties a result to the command it ran. Apart from the trial itself, which the contract need not load."""

from __future__ import annotations

import hashlib

from ..model import TrialResult


def command_hash(activate: str, run: str) -> str:
    """Names the exact command a trial ran: a result is shown only while the contract still runs it."""
    return hashlib.sha256(f"{activate}\n{run}".encode()).hexdigest()[:12]


def describe(result: TrialResult, move: str = "", brief: bool = False) -> list[str]:
    """The trial in a few lines, as the app and `wamf-tui try` show it; `move` is the job's switch that
    would send what it wrote into the checkout elsewhere, when the job has one. `brief` (one line in the
    question area): how it ended, its steps, what it wrote, the cause; not memory or the log's path."""
    how = {"exited": f"exited with status {result.exit_status}", "limit": "stopped at the time limit",
           "stopped": "stopped by you", "not started": "did not start"}[result.ended]
    lines = [f"{how} after {_seconds(result.wall_s)}"
             + (f"; first output after {_seconds(result.first_output_s)}" if result.first_output_s is not None else "")]
    if result.steps:
        line = f"{result.steps} optimizer step{'s' if result.steps != 1 else ''}"
        if result.steady_s is not None:
            line += f"; steady {step_time(result.steady_s)}/step after {result.warmup} warm-up step(s)"
        lines.append(line)
    else:
        lines.append("no optimizer step seen (a job that updates weights by hand, or one that never reached its "
                     "loop): step time not measured")
    memory = []
    if result.peak_host_mib:
        memory.append(f"host {result.peak_host_mib} MiB")
    if result.peak_gpu_mib:
        memory.append(f"GPU {result.peak_gpu_mib} MiB (utilisation up to {result.gpu_util or 0} %)")
    if memory and not brief:
        lines.append("peak memory: " + ", ".join(memory))
    if result.touched:
        shown = ", ".join(result.touched[:5]) + (f" and {len(result.touched) - 5} more" if len(result.touched) > 5
                                                 else "")
        lines.append(f"wrote into the checkout: {shown}" + (f" (move it with {move})" if move else ""))
    if result.cause:
        lines.append(f"likely cause: {result.cause}")
    if result.log and not brief:
        lines.append(f"full output: {result.log}")
    return lines


def spread(result: TrialResult) -> tuple[float, float] | None:
    """The 10th and 90th percentile of the steady step times (after the warm-up)."""
    steady_times = sorted(result.step_times[max(0, (result.warmup or 1) - 1):])
    if len(steady_times) < 2:
        return None
    at = lambda q: steady_times[min(len(steady_times) - 1, int(q * (len(steady_times) - 1) + 0.5))]  # noqa: E731
    return (at(0.1), at(0.9))


def section_rows(result: TrialResult) -> list[tuple[str, str]]:
    """The measured baseline, as the contract's **Trial** row lists it."""
    how = {"exited": f"exit {result.exit_status}", "limit": "stopped at the time limit",
           "stopped": "stopped by the user", "not started": "did not start"}[result.ended]
    rows = [("command", f"{result.command_hash} (the activate and run lines above)"), ("when", result.started),
            ("ended", f"{how} after {_seconds(result.wall_s)}"),
            ("optimizer steps", f"{result.steps}" + (f" ({result.warmup} warm-up)" if result.warmup else ""))]
    if result.steady_s is not None:
        band = spread(result)
        rows.append(("steady step time", f"median {step_time(result.steady_s)}" + (
            f", {step_time(band[0])} to {step_time(band[1])} (10th to 90th percentile)" if band else "")))
    if result.peak_gpu_by_device:
        rows.append(("peak GPU memory", ", ".join(f"GPU {i}: {m} MiB" for i, m in result.peak_gpu_by_device.items())))
    if result.peak_host_mib:
        rows.append(("peak host memory", f"{result.peak_host_mib} MiB"))
    if result.throughput:
        rows.append(("throughput", f"{result.throughput} (as the job reported it)"))
    if result.touched:
        rows.append(("wrote into the checkout", ", ".join(result.touched[:5])))
    return rows


def step_time(s: float) -> str:
    return f"{s * 1000:.2f} ms" if s < 0.1 else f"{s:.3f} s"


def _seconds(s: float | None) -> str:
    s = s or 0.0
    return f"{s:.1f} s" if s < 120 else f"{int(s // 60)} min {int(s % 60)} s"
