"""The trial probe's cost on a job's steady step time (#33): a small CPU PyTorch job run bare, with the
probe (`step_probe` as its sitecustomize: step times and effects), and with the probe tracing three
checkpoint rows' lines too. Goal: the steady step time grows by under 2 % with row probing on.

The job times its own steps in CPU time of its thread (one torch thread: the other processes of a
shared 2-core VM move wall time by +-15 % between runs, CPU time much less) and prints the median
after 20 warm-up steps, and the sum of its first 3 steps: the rows are traced only for those
(LINE_STEPS), so that sum is the bounded, one-time cost of row probing. The three sides run
interleaved, ROUNDS rounds; each reports the median of its rounds, and a second bare side shows
the noise of the machine itself.

    python benchmarks/probe_overhead.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

JOB = """import statistics, time
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 256)
times = []
for step in range(220):
    t = time.thread_time()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    times.append(time.thread_time() - t)
print(statistics.median(times[20:]), sum(times[:3]))
"""
ROUNDS = 9
PROBE = Path(__file__).resolve().parent.parent / "wamf_tui" / "bench" / "step_probe.py"  # what a trial loads
ROWS = "train.py:12\ntrain.py:13\ntrain.py:14"  # the forward, the loss and the backward


def run(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "train.py"], cwd=folder, env=env, capture_output=True, text=True,
                         timeout=600, check=True)
    median, first = out.stdout.split()
    return float(median), float(first)


def main() -> None:
    probe = PROBE
    with tempfile.TemporaryDirectory() as d:
        folder, probe_dir = Path(d) / "job", Path(d) / "probe"
        folder.mkdir()
        probe_dir.mkdir()
        (folder / "train.py").write_text(JOB)
        shutil.copyfile(probe, probe_dir / "sitecustomize.py")
        bare = {k: v for k, v in os.environ.items() if not k.startswith("WAMF_TRIAL")}
        probed = {**bare, "PYTHONPATH": str(probe_dir), "WAMF_TRIAL_STEPS": str(probe_dir / "steps"),
                  "WAMF_TRIAL_EFFECTS": str(probe_dir / "effects"), "WAMF_TRIAL_REPO": str(folder)}
        rows = {**probed, "WAMF_TRIAL_LINES": ROWS}
        sides: dict[str, list[tuple[float, float]]] = {"bare": [], "bare again": [], "probe": [], "probe+rows": []}
        order = [("bare", bare), ("bare again", bare), ("probe", probed), ("probe+rows", rows)]
        for i in range(ROUNDS):  # each side first in turn: the first run of a round is often the fastest
            for name, env in order[i % 4:] + order[:i % 4]:
                sides[name].append(run(folder, env))
        lines = (probe_dir / "effects").read_text().splitlines()
        assert any('"kind": "line"' in x for x in lines), "the rows were not traced"
    base = statistics.median(m for m, _ in sides["bare"])
    first = statistics.median(f for _, f in sides["bare"])
    for name, results in sides.items():
        mid = statistics.median(m for m, _ in results)
        print(f"{name:<11} steady step {mid * 1000:.3f} ms ({(mid / base - 1) * 100:+.1f} %), "
              f"first 3 steps {statistics.median(f for _, f in results) * 1000:.1f} ms "
              f"(bare {first * 1000:.1f} ms)")
    noise = statistics.median(m for m, _ in sides["bare again"]) / base - 1
    rows_cost = statistics.median(m for m, _ in sides["probe+rows"]) / base - 1
    print(f"probe with row probing: {rows_cost * 100:+.1f} % on the steady step time (goal under 2 %); "
          f"the same bare job run twice differs by {noise * 100:+.1f} % here")
    per_step = in_loop_cost()
    print(f"what the probe adds inside a step, timed in one process: {per_step * 1e6:+.2f} us a step "
          f"(an autocast entered, an optimizer step's two hooks, one audited event) = "
          f"{per_step / base * 100:+.3f} % of this job's {base * 1000:.2f} ms step")


def in_loop_cost(n: int = 20000) -> float:
    """Seconds a step that the probe's hooks add, side by side in this process: with and without the
    probe's autocast wrapper, step hooks and audit hook. Whole runs above are too noisy on a shared VM
    to see a 2 % difference; this is the part that runs in every steady step (the row tracer is off by then)."""
    import importlib
    import importlib.util
    import time

    import torch

    spec = importlib.util.spec_from_file_location("wamf_probe", PROBE)
    assert spec is not None and spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)  # no WAMF_TRIAL_STEPS here: it patches nothing by itself
    model = torch.nn.Linear(1, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)

    def loop() -> float:
        t = time.perf_counter()
        for _ in range(n):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                pass
            opt.step()
            sys.audit("wamf.probe.bench", 1)
        return (time.perf_counter() - t) / n

    bare = min(loop() for _ in range(5))
    probe._autocast(importlib.import_module("torch.amp.autocast_mode"))
    probe._optim(importlib.import_module("torch.optim.optimizer"))
    sys.addaudithook(probe._audit)
    probed = min(loop() for _ in range(5))
    return probed - bare  # below zero: under the noise of this machine


if __name__ == "__main__":
    main()
