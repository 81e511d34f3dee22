"""Lines analysed per second: one large generated script, and a repo's worth of files.

Reference: `ast.parse` alone over the same text in the same process, as Python runs it
(cyclic collector on) and with the collector paused as the analyzer pauses it, so the
ratios show what the analysis adds to parsing. Each figure is the best of 3 runs,
interleaved, since this VM stalls at random. Goal: at least 20,000 lines a second.

    python benchmarks/analyze_speed.py
"""

from __future__ import annotations

import ast
import gc
import tempfile
import time
from pathlib import Path

from wamf_tui.read.analyze import analyze_script

BLOCK = '''
def step_{i}(model, batch, optimizer, args):
    out = model(batch["x"])
    loss = torch.nn.functional.cross_entropy(out, batch["y"])
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
    optimizer.step()
    if args.save_every and {i} % args.save_every == 0:
        torch.save(model.state_dict(), f"{{args.out_dir}}/ckpt.pt")
    return loss.item()
'''


def best_of(runs: int, **jobs) -> dict[str, float]:
    best = {name: float("inf") for name in jobs}
    for _ in range(runs):
        for name, job in jobs.items():
            t = time.perf_counter()
            job()
            best[name] = min(best[name], time.perf_counter() - t)
    return best


def parse_all(files: list[Path], paused: bool) -> None:
    if paused:
        gc.disable()
    try:
        for p in files:
            ast.parse(p.read_text())
    finally:
        gc.enable()


def report(label: str, files: list[Path], root: Path) -> None:
    lines = sum(p.read_text().count("\n") for p in files)
    s = best_of(3, parse=lambda: parse_all(files, False), paused=lambda: parse_all(files, True),
                analyze=lambda: [analyze_script(p, root) for p in files])
    print(f"{label}, {lines} lines: {lines / s['analyze']:,.0f} lines/s (goal >= 20,000); "
          f"ast.parse alone {lines / s['parse']:,.0f} lines/s ({s['analyze'] / s['parse']:.2f}x its time), "
          f"collector paused {lines / s['paused']:,.0f} lines/s ({s['analyze'] / s['paused']:.2f}x)")


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        big = root / "train.py"
        # 4,000 blocks stay under the analyzer's 2 MiB read limit
        big.write_text("import torch\n" + "".join(BLOCK.format(i=i) for i in range(4_000)))
        report("one script", [big], root)

        files = []
        for k in range(200):
            p = root / "pkg" / f"m{k}.py"
            p.parent.mkdir(exist_ok=True)
            p.write_text("import torch\n" + "".join(BLOCK.format(i=i) for i in range(40)))
            files.append(p)
        report(f"repo of {len(files)} files", files, root)


if __name__ == "__main__":
    main()
