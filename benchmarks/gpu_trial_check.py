"""The device check of #33, for a session that is lent a GPU: a trial of a small CUDA job that trains
under bf16 autocast records the GPU memory it grew on each device, and the precision claim holds.

Exits 0 when both hold, 1 when one does not, 77 when no CUDA device is visible (nothing checked).
About 30 s on a warm machine; it needs only this package, torch with CUDA and NVML.

    python benchmarks/gpu_trial_check.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

JOB = """import torch
model = torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096)).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(256, 4096, device="cuda")
for step in range(200):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
torch.cuda.synchronize()
print("done")
"""


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device visible: nothing checked")
        return 77
    from wamf_tui.bench import results, trial
    from wamf_tui.contract import proof

    with tempfile.TemporaryDirectory() as d:
        repo = Path(d)
        (repo / "train.py").write_text(JOB)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        gpus = trial.gpus_in_use(trial.sample_gpus(), {"CUDA_VISIBLE_DEVICES": "0"})
        job = trial.Trial("", f"{sys.executable} train.py", repo, gpus=gpus, read_gpus=trial.sample_gpus)
        result = proof.run(job, proof.Expected(precision="bf16"), print)
    for line in results.describe(result) + proof.describe(result.claims):
        print(line)
    print("peak GPU memory by device:", result.peak_gpu_by_device)
    precision = next((c for c in result.claims if c.claim == "precision bf16"), None)
    ok = bool(result.peak_gpu_by_device) and precision is not None and precision.ok and result.exit_status == 0
    print("GPU check:", "ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
