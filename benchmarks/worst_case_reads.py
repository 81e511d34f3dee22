"""The worst reads a hostile or odd repository can ask for, each timed as a ratio to reading a typical
job (the shipped demo's train.py, analysed as the app analyses it) in the same run.

Each worst case must stay bounded: linear in its size, capped in what it reads, or refused at once.
Before issue #34 a pixi.lock of blank lines backtracked for minutes, a YAML "billion laughs" file never
finished, a 100,000-line script of constants took minutes, and a state file linked to /dev/zero grew the
app past 7 GB. Each figure is the best of `RUNS` runs (this VM stalls at random).

    python benchmarks/worst_case_reads.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from wamf_tui.detect.environment import _locked
from wamf_tui.read.analyze import analyze_script
from wamf_tui.read.config_file import load_yaml
from wamf_tui.read.hydra_config import compose

RUNS = 3
LAUGHS = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
          + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
          + "deepspeed: ds.json\ntrain: *i\n")
LOOP = "for step in range(10):\n    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"


def best(job: Callable[[], object], runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        job()
        times.append(time.perf_counter() - t)
    return min(times)


def refused(job: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            job()
        except Exception:  # the refusal is the expected outcome: its time is what counts
            pass
    return run


def build(tmp: Path) -> dict[str, tuple[str, Callable[[], object]]]:
    demo = tmp / "demo"
    demo.mkdir()
    shutil.copy(Path(__file__).resolve().parent.parent / "wamf_tui" / "demo" / "train.py", demo / "train.py")
    flat = tmp / "flat"
    flat.mkdir()
    (flat / "train.py").write_text("import torch\n" + "".join(f"x{i} = {i}\n" for i in range(100_000)) + LOOP)
    funcs = tmp / "funcs"
    funcs.mkdir()
    (funcs / "train.py").write_text("import torch\n" + "".join(
        f"def f{i}(x):\n    y = x + {i}\n    return y\n\n" for i in range(25_000)) + LOOP)
    locks = tmp / "locks"
    locks.mkdir()
    conda = "- conda: " + "a/" * 500 + "x" + "-1" * 400 + "\n"
    body = "\n" * 20_000_000 + " " * 10_000_000 + "\n" + conda * ((20 << 20) // len(conda))
    (locks / "pixi.lock").write_text(body)  # about 50 MB: blank lines, one huge line, backtracking bait
    (locks / "uv.lock").write_text("[[package]]\n" + "\n" * (50 << 20))
    yaml_repo = tmp / "yaml"
    (yaml_repo / "conf").mkdir(parents=True)
    (yaml_repo / "laughs.yaml").write_text(LAUGHS)
    (yaml_repo / "conf" / "config.yaml").write_text(LAUGHS)
    (yaml_repo / "train.py").write_text("import torch\nimport deepspeed\n" + LOOP)
    state = tmp / "state"
    (state / "wamf-tui").mkdir(parents=True)
    return {
        "typical": ("the demo's train.py, analysed", lambda: analyze_script(demo / "train.py", demo)),
        "flat": ("100,000-line script of constants", lambda: analyze_script(flat / "train.py", flat)),
        "funcs": ("100,000-line script of functions", lambda: analyze_script(funcs / "train.py", funcs)),
        "pixi": ("50 MB pixi.lock (read capped at 16 MiB)", lambda: _locked(locks / "pixi.lock")),
        "uv": ("50 MB uv.lock of blank lines", lambda: _locked(locks / "uv.lock")),
        "laughs": ("YAML billion laughs, refused", refused(lambda: load_yaml(LAUGHS))),
        "named": ("a script whose command names it", lambda: analyze_script(
            yaml_repo / "train.py", yaml_repo, ["--config", "laughs.yaml"])),
        "hydra": ("as a Hydra config, refused",
                  lambda: compose(yaml_repo / "conf", "config", None, "conf/config.yaml")),
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="wamf-worst-") as d:
        tmp = Path(d)
        jobs = build(tmp)
        os.environ["XDG_STATE_HOME"] = str(tmp / "state")
        from wamf_tui.session import store as session

        (session.state_file(tmp / "demo")).symlink_to("/dev/zero")
        jobs["state"] = ("saved session linked to /dev/zero", lambda: session.load_saved(tmp / "demo"))
        times = {name: best(job, 1 if name in ("flat", "funcs") else RUNS) for name, (_, job) in jobs.items()}
    ref = times["typical"]
    print(f"reference: {jobs['typical'][0]}: {ref * 1000:.1f} ms")
    for name, (label, _) in jobs.items():
        if name != "typical":
            print(f"{label:<42} {times[name]:8.3f} s  {times[name] / ref:8.1f}x the typical job")
    print("bound: every case ends well within the reading's 60 s budget; lock files and YAML are linear or refused")


if __name__ == "__main__":
    main()
