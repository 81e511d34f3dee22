"""`wamf-tui detect` against `python -m torch.utils.collect_env`, in the same environment, one run.

Both report the torch version, its CUDA build, GPU models and the driver. Goal: detect at
least 10 times faster. Each side is the best of 5 interleaved runs: a shared VM has slow
spells of hundreds of milliseconds. A third side, Python importing the pydantic model and
nothing else, is the floor any detect pays here. Then the script scan of a generated
50,000-file git repo.

    python benchmarks/detect_speed.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], cwd: str | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=600)
    return time.perf_counter() - t, out.stdout


def main() -> None:
    # An installed wheel has its bytecode compiled by pip; a source checkout run with
    # PYTHONDONTWRITEBYTECODE=1 would recompile the package at every start instead.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "wamf_tui")],
                   check=True)
    here = str(Path(__file__).resolve().parent.parent)
    det, ref, floor = [], [], []
    for _ in range(5):  # interleaved, so both sides see the same slow and fast spells of the VM
        det.append(timed([sys.executable, "-m", "wamf_tui", "detect", here, "--json"]))
        ref.append(timed([sys.executable, "-m", "torch.utils.collect_env"]))
        floor.append(timed([sys.executable, "-c", "import wamf_tui.model"]))
    (det_s, det_out), (ref_s, ref_out), (floor_s, _) = min(det), min(ref), min(floor)
    env = json.loads(det_out)["env"]
    ref_torch = next((x.split(":", 1)[1].strip() for x in ref_out.splitlines() if x.startswith("PyTorch version")), "?")
    print(f"torch: detect {env['torch']} (CUDA build {env['torch_cuda']}) | collect_env {ref_torch}")
    print(f"detect {det_s:.2f} s, collect_env {ref_s:.2f} s: detect is {ref_s / det_s:.1f}x faster (goal >= 10x)")
    # Python starting and importing the pydantic model, before any detecting: no detect can beat it.
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
