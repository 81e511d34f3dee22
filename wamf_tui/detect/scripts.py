"""Find the job script and the command that launches it.

Candidates come from the repo's tracked files (`git ls-files`, so .gitignore is
respected), ranked by name, torch use and appearance in a launch command found
in shell scripts, sbatch files, Makefiles and README code blocks. Bounded in
files read and time, and says so when it stops early.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from .. import children
from ..model import LaunchCommand, ScriptCandidate, ScriptScan

ENTRY_NAME = re.compile(
    r"^(train|finetune|fine_tune|pretrain|main|run_\w+|run|sample|generate|infer|inference|eval|evaluate|bench\w*)"
    r"(_\w+)?\.py$"
)
LAUNCHERS = ("torchrun", "accelerate", "deepspeed", "srun", "python", "python3", "mpirun")
MAX_READ = 3000  # files opened
MAX_BYTES = 256 * 1024
TIME_BUDGET_S = 3.0
_NPROC = ("--nproc_per_node", "--nproc-per-node", "--num_processes", "--num_gpus", "--ntasks-per-node", "--gpus")
_NNODES = ("--nnodes", "--num_machines", "--num_nodes", "-N", "--nodes")
_TORCH = re.compile(
    r"^\s*(import torch|from torch\b|import lightning|import pytorch_lightning|from transformers)", re.M
)


def _git_env() -> dict[str, str]:
    """A plain environment for git, with the user's HOME: their `safe.directory` lives in ~/.gitconfig."""
    env = {"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "PATH": "/usr/bin:/bin:/usr/local/bin"}
    if os.environ.get("HOME"):
        env["HOME"] = os.environ["HOME"]
    return env


def tracked_files(root: Path) -> list[str]:
    """Tracked and untracked-not-ignored files; falls back to a bounded walk outside git."""
    try:
        out = children.run(  # stoppable: git on a dead network mount must not outlive the app
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"], 15,
            env=_git_env(), encoding="utf-8", errors="replace",
        )
        if out.returncode == 0:
            return [f for f in out.stdout.split("\0") if f]
    except (OSError, subprocess.TimeoutExpired):
        pass
    files = []
    for p in root.rglob("*"):
        if len(files) >= 200_000:
            break
        if any(part.startswith(".") for part in p.relative_to(root).parts):
            continue
        try:
            if p.is_file():
                files.append(str(p.relative_to(root)))
        except OSError:
            continue
    return files


def parse_launch(command: str, source: str = "") -> LaunchCommand | None:
    """Split a shell command into launcher, script and arguments; None if it launches no Python."""
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    while words and (re.fullmatch(r"\w+=\S*", words[0]) or words[0] in ("exec", "time", "nohup", "env")):
        words = words[1:]
    if not words:
        return None
    launchers: list[str] = []
    nproc = nnodes = None
    i = 0
    while i < len(words):
        w = Path(words[i]).name
        if w in ("srun", "mpirun", "torchrun", "deepspeed"):
            launchers.append(w)
            i += 1
        elif w == "accelerate" and i + 1 < len(words) and words[i + 1] == "launch":
            launchers.append("accelerate launch")
            i += 2
        elif re.fullmatch(r"python[\d.]*", w):
            launchers.append("python")
            i += 1
            if i + 1 < len(words) and words[i] == "-m":
                if words[i + 1] != "torch.distributed.run":
                    return LaunchCommand(command=command.strip(), launcher="python -m", script=words[i + 1],
                                         args=words[i + 2:], source=source)
                launchers[-1] = "torchrun"
                i += 2
        else:
            break
        # the launcher's own options, up to the next launcher or the script
        while i < len(words) and words[i].startswith("-"):
            opt, _, val = words[i].partition("=")
            nxt = words[i + 1] if i + 1 < len(words) else ""
            if not val and nxt and not nxt.startswith("-") and not nxt.endswith(".py") and not _is_launcher(nxt):
                val = nxt
                i += 1
            if val.isdigit() and opt in _NPROC:
                nproc = int(val)
            if val.isdigit() and opt in _NNODES:
                nnodes = int(val)
            i += 1
    if not launchers or i >= len(words) or not words[i].endswith(".py"):
        return None
    return LaunchCommand(command=command.strip(), launcher=" ".join(launchers), script=words[i],
                         args=words[i + 1:], nproc_per_node=nproc, nnodes=nnodes, source=source)


def _is_launcher(word: str) -> bool:
    return Path(word).name in LAUNCHERS or bool(re.fullmatch(r"python[\d.]*", Path(word).name))


def _commands_in(name: str, text: str) -> list[tuple[int, str]]:
    """Candidate command lines with their line numbers; continuation lines joined."""
    lines = text.splitlines()
    out = []
    in_block = not name.lower().endswith((".md", ".rst", ".txt"))
    buf, start = "", 0
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("```"):
            in_block = not in_block if name.lower().endswith(".md") else in_block
            continue
        if not in_block:
            continue
        if name.endswith("Makefile") or name.endswith(".mk"):
            if not line.startswith("\t"):
                continue
            s = s.lstrip("@-")
        s = s.lstrip("$ ").strip()
        if not buf:
            start = n
        if s.endswith("\\"):
            buf += s[:-1] + " "
            continue
        buf += s
        if buf and not buf.startswith("#"):
            out.append((start, buf))
        buf = ""
    return out


def scan_scripts(root: str | Path, files: list[str] | None = None) -> ScriptScan:
    root = Path(root)
    deadline = time.monotonic() + TIME_BUDGET_S
    files = tracked_files(root) if files is None else files
    scan = ScriptScan(files_seen=len(files))
    scan.folders = sorted({f.split("/", 1)[0] + "/" for f in files if "/" in f})[:30]
    cands: dict[str, ScriptCandidate] = {}
    launch_sources = [
        f for f in files
        if f.endswith((".sh", ".sbatch", ".slurm", "Makefile", ".mk")) or Path(f).name.lower().startswith("readme")
    ]
    py = [f for f in files if f.endswith(".py") and "/site-packages/" not in f]
    # Entry-point names first, so the budget goes to the likeliest files.
    py.sort(key=lambda f: (not ENTRY_NAME.match(Path(f).name), f.count("/"), f))
    read = 0
    for rel in launch_sources[:200] + py:
        if read >= MAX_READ or time.monotonic() > deadline:
            scan.stopped_early = f"stopped after reading {read} of {len(files)} files (limit reached)"
            break
        read += 1
        text = _read(root / rel)
        if text is None:
            continue
        if rel.endswith(".py"):
            score, reasons = 0, []
            if ENTRY_NAME.match(Path(rel).name):
                score += 5
                reasons.append("entry-point name")
            if _TORCH.search(text):
                score += 4
                reasons.append("uses torch")
            if re.search(r"""__name__\s*==\s*['"]__main__['"]""", text):
                score += 2
                reasons.append("has __main__")
            if re.search(r"\.backward\(|optimizer\.step\(|Trainer\(|\.fit\(", text):
                score += 3
                reasons.append("trains")
            if score >= 6:
                c = cands.setdefault(rel, ScriptCandidate(path=rel, score=0))
                c.score += score - (rel.count("/") if "test" not in rel else 10)
                c.reasons += reasons
            continue
        for n, cmd in _commands_in(rel, text):
            launch = parse_launch(cmd, f"{rel}:{n}")
            if launch and launch.script:
                scan.launches.append(launch)
    for launch in scan.launches:
        script = _resolve(root, launch.script or "")
        if script is None:
            continue
        c = cands.setdefault(script, ScriptCandidate(path=script, score=0))
        c.score += 6
        c.reasons.append(f"launched in {launch.source}")
        if c.launch is None or launch.launcher != "python":
            c.launch = launch
    scan.candidates = sorted(cands.values(), key=lambda c: (-c.score, c.path))[:20]
    return scan


def _resolve(root: Path, script: str) -> str | None:
    p = (root / script).resolve()
    try:
        return str(p.relative_to(root.resolve())) if p.is_file() else None
    except ValueError:
        return None


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES)
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", errors="replace")
