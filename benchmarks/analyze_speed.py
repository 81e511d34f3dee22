"""Lines analysed per second: one large generated script, and a repo's worth of files.

Reference: `ast.parse` alone over the same text in the same process, so the ratio shows
what the analysis adds to parsing. Goal: at least 20,000 lines a second.

    python benchmarks/analyze_speed.py
"""

from __future__ import annotations

import ast
import tempfile
import time
from pathlib import Path

from wamf_tui.analyze import analyze_script

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


def main() -> None:
    with tempfile.TemporaryDirectory() as d:
        root = Path(d)
        big = root / "train.py"
        # 4,000 blocks stay under the analyzer's 2 MiB read limit
        big.write_text("import torch\n" + "".join(BLOCK.format(i=i) for i in range(4_000)))
        n = big.read_text().count("\n")
        t = time.perf_counter()
        ast.parse(big.read_text())
        parse_s = time.perf_counter() - t
        t = time.perf_counter()
        analyze_script(big, root)
        s = time.perf_counter() - t
        print(f"one script, {n} lines: {n / s:,.0f} lines/s ({s / parse_s:.1f}x ast.parse alone)")

        files = []
        for k in range(200):
            p = root / "pkg" / f"m{k}.py"
            p.parent.mkdir(exist_ok=True)
            p.write_text("import torch\n" + "".join(BLOCK.format(i=i) for i in range(40)))
            files.append(p)
        total = sum(p.read_text().count("\n") for p in files)
        t = time.perf_counter()
        for p in files:
            ast.parse(p.read_text())
        parse_s = time.perf_counter() - t
        t = time.perf_counter()
        for p in files:
            analyze_script(p, root)
        s = time.perf_counter() - t
        print(f"repo of {len(files)} files, {total} lines: {total / s:,.0f} lines/s (goal >= 20,000); "
              f"ast.parse alone {total / parse_s:,.0f} lines/s")


if __name__ == "__main__":
    main()
