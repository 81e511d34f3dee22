"""`wamf-tui detect` against `python -m torch.utils.collect_env`, in the same environment, one run.

Both report the torch version, its CUDA build, GPU models and the driver. Goal: detect at
least 10 times faster. Where Slurm's clients are installed but no controller answers, detect spends
its whole Slurm budget (4 s) waiting, which collect_env never asks: that run is timed once and said,
and the side by side runs with Slurm's clients off PATH. Each side is the best of 5 interleaved
runs: a shared VM has slow spells of hundreds of milliseconds. A third side, Python importing the model and
nothing else, is the floor any detect pays here. Then the script scan of a generated
50,000-file git repo.

    python benchmarks/detect_speed.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], cwd: str | None = None, env: dict[str, str] | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=600, env=env)
    return time.perf_counter() - t, out.stdout


def slurm_silent() -> bool:
    """Slurm's clients are on PATH but no controller answers within 2 s."""
    if shutil.which("squeue") is None:
        return False
    try:
        return subprocess.run(["squeue", "--me", "--noheader"], capture_output=True, timeout=2).returncode != 0
    except subprocess.TimeoutExpired:
        return True


def without_slurm(folder: Path) -> dict[str, str]:
    """The environment with PATH replaced by one folder linking every program on it but Slurm's clients."""
    for d in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        for name in names:
            if name not in ("squeue", "scontrol") and not (folder / name).exists():
                (folder / name).symlink_to(Path(d) / name)
    return {**os.environ, "PATH": str(folder)}


def main() -> None:
    # An installed wheel has its bytecode compiled by pip; a source checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would recompile the package at every start instead.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "wamf_tui")],
                   check=True)
    here = str(Path(__file__).resolve().parent.parent)
    detect = [sys.executable, "-m", "wamf_tui", "detect", here, "--json"]
    env = None
    links = tempfile.TemporaryDirectory()
    if slurm_silent():
        print(f"Slurm's clients are here but no controller answers: detect waits {timed(detect)[0]:.2f} s for it;"
              " below, Slurm's clients are off PATH")
        env = without_slurm(Path(links.name))
    det, ref, floor = [], [], []
    for _ in range(5):  # interleaved, so both sides see the same slow and fast spells of the VM
        det.append(timed(detect, env=env))
        ref.append(timed([sys.executable, "-m", "torch.utils.collect_env"]))
        floor.append(timed([sys.executable, "-c", "import wamf_tui.model"]))
    links.cleanup()
    (det_s, det_out), (ref_s, ref_out), (floor_s, _) = min(det), min(ref), min(floor)
    found = json.loads(det_out)["env"]
    ref_torch = next((x.split(":", 1)[1].strip() for x in ref_out.splitlines() if x.startswith("PyTorch version")), "?")
    print(f"torch: detect {found['torch']} (CUDA build {found['torch_cuda']}) | collect_env {ref_torch}")
    print(f"detect {det_s:.2f} s, collect_env {ref_s:.2f} s: detect is {ref_s / det_s:.1f}x faster (goal >= 10x)")
    # Python starting and importing the model, before any detecting: no detect can beat it.
    print(f"floor: python importing the model alone {floor_s:.2f} s, so at most {ref_s / floor_s:.1f}x here")

    if "--no-scan" in sys.argv:
        return
    from wamf_tui.detect.scripts import scan_scripts

    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        for i in range(50_000):
            sub = root / f"pkg{i // 1000}"
            sub.mkdir(exist_ok=True)
            (sub / f"mod{i}.py").write_text("import torch\nx = 1\n")
        (root / "train.py").write_text("import torch\nloss.backward()\noptimizer.step()\n")
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=root, check=True)
        t = time.perf_counter()
        scan = scan_scripts(root)
        s = time.perf_counter() - t
        print(f"scan of {scan.files_seen} files: {s:.2f} s, top candidate {scan.candidates[0].path}, "
              f"{scan.stopped_early or 'read everything'}")


if __name__ == "__main__":
    main()
