"""First paint counted in CPU instructions (valgrind), against the hello-world app, one run each.

The shared 2-core VM changes speed from one second to the next, so wall-clock first paint
(`tui_perf.py`) moves by a tenth between runs. An instruction count does not: use this one
to tell whether a change made start-up cheaper. Each program runs in a tmux pane of 120x40
and stops the moment it hands a frame with the first question to the terminal.

    apt-get install valgrind   # once
    python benchmarks/paint_instructions.py
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable
# The app as `wamf-tui` runs it, past the entry's check: with PYTHONPATH set (which loads the hook below) the
# entry re-runs Python isolated, which would drop the hook and never stop.
WAMF = [PY, "-c", "'import sys; from wamf_tui.cli import main; sys.exit(main(sys.argv[1:]))'"]

# Loaded before anything else in each measured program: the process ends right after Textual's
# driver is handed the first frame that shows the question.
STOP_AT_FIRST_FRAME = r'''
import importlib.abc, importlib.util, os, re, sys
_ESC = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|P[^\x1b]*\x1b\\|.)")

def _patch(module):
    write = module.LinuxDriver.write
    def stop_after(self, data):
        write(self, data)
        if "How well do you know ML systems?" in _ESC.sub("", data):
            os._exit(0)
    module.LinuxDriver.write = stop_after

class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "textual.drivers.linux_driver":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        run = spec.loader.exec_module
        spec.loader.exec_module = lambda module: (run(module), _patch(module))
        return spec

sys.meta_path.insert(0, _Hook())
'''


def count(name: str, argv: list[str], work: Path) -> int:
    log = work / f"{name}.log"
    cmd = (f"cd {work} && PYTHONPATH={work} PYTHONHASHSEED=0 XDG_STATE_HOME={work / 'state'} "
           f"valgrind --tool=callgrind --callgrind-out-file=/dev/null --log-file={log} "
           f"{' '.join(argv)}; tmux wait-for -S {name}")
    subprocess.run(["tmux", "new-session", "-d", "-s", name, "-x", "120", "-y", "40", cmd], check=True)
    subprocess.run(["tmux", "wait-for", name], check=True, timeout=600)
    found = re.search(r"Collected : (\d+)", log.read_text())
    if not found:
        raise SystemExit(f"{name}: no count in {log}")
    return int(found.group(1))


def main() -> None:
    subprocess.run([PY, "-m", "compileall", "-q", str(HERE.parent / "wamf_tui")], check=True)
    work = Path(tempfile.mkdtemp())
    (work / "sitecustomize.py").write_text(STOP_AT_FIRST_FRAME)  # PYTHONPATH makes Python load it first
    demo = subprocess.run([PY, "-c", f"from wamf_tui import demo_repo; print(demo_repo.make_demo({str(work)!r}))"],
                          capture_output=True, text=True, check=True).stdout.strip()
    keep = f"keep{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", keep, "sleep 3600"], check=True)
    try:
        hello = count("hello", [PY, str(HERE / "hello_app.py")], work)
        imports = count("imports", [PY, str(HERE / "hello_app.py"), "--with-wamf-imports"], work)
        ours = count("ours", [*WAMF, demo, "--fresh"], work)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", keep])
        shutil.rmtree(work, ignore_errors=True)
    print(f"instructions to first paint: wamf-tui {ours / 1e9:.2f} G, hello world {hello / 1e9:.2f} G: "
          f"{ours / hello:.2f}x (goal <= 1.3x, issue #36); hello world after importing what wamf-tui imports: "
          f"{imports / hello:.2f}x")


if __name__ == "__main__":
    main()
