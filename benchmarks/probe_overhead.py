"""The trial probe's cost on a job's steady step time (#33): a small CPU PyTorch job run bare, with the
probe (`step_probe` as its sitecustomize: step times and effects), and with the probe tracing three
checkpoint rows' lines too. Goal: the steady step time grows by under 2 % with row probing on.

The job times its own steps (perf_counter around each iteration) and prints the median after 20
warm-up steps, and the sum of its first 3 steps: the rows are traced only for those (LINE_STEPS),
so that sum is the bounded, one-time cost of row probing. The three sides run interleaved, 5 rounds,
and each reports its best round: a shared VM has slow spells.

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
    t = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(x)
    loss = out.float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
    times.append(time.perf_counter() - t)
print(statistics.median(times[20:]), sum(times[:3]))
"""
ROWS = "train.py:12\ntrain.py:13\ntrain.py:14"  # the forward, the loss and the backward


def run(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "train.py"], cwd=folder, env=env, capture_output=True, text=True,
                         timeout=600, check=True)
    median, first = out.stdout.split()
    return float(median), float(first)


def main() -> None:
    probe = Path(__file__).resolve().parent.parent / "wamf_tui" / "step_probe.py"
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
        sides: dict[str, list[tuple[float, float]]] = {"bare": [], "probe": [], "probe+rows": []}
        for _ in range(5):
            for name, env in (("bare", bare), ("probe", probed), ("probe+rows", rows)):
                sides[name].append(run(folder, env))
        lines = (probe_dir / "effects").read_text().splitlines()
        assert any('"kind": "line"' in x for x in lines), "the rows were not traced"
    base = min(m for m, _ in sides["bare"])
    first = statistics.median(f for _, f in sides["bare"])
    for name, results in sides.items():
        best = min(m for m, _ in results)
        print(f"{name:<11} steady step {best * 1000:.3f} ms ({(best / base - 1) * 100:+.1f} %), "
              f"first 3 steps {statistics.median(f for _, f in results) * 1000:.1f} ms "
              f"(bare {first * 1000:.1f} ms)")
    worst = min(m for m, _ in sides["probe+rows"]) / base - 1
    print(f"probe with row probing: {worst * 100:+.1f} % on the steady step time (goal under 2 %)")


if __name__ == "__main__":
    main()
