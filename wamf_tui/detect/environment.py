"""Which Python environment the job uses, how to enter it, and what is installed.

Versions are read from the interpreter's installed package metadata in a
subprocess with a timeout; torch is never imported (that costs seconds).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path

from .. import children
from ..model import EnvFacts, PackageVersion

PACKAGES = (
    "torch", "triton", "numpy", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11", "transformers", "accelerate",
    "deepspeed", "lightning", "pytorch-lightning", "flash-attn", "apex", "xformers", "peft",
    "datasets", "hydra-core", "omegaconf", "wandb", "vllm", "megatron-core", "bitsandbytes", "timm",
)
PROBE_TIMEOUT_S = 8.0

# Runs inside the job's interpreter with -I (isolated: no user site, no cwd on sys.path).
# It lists the `*.dist-info` / `*.egg-info` folder names on sys.path instead of asking
# importlib.metadata, which searches every path entry once per package (half a second with
# torch installed). torch's CUDA build is read from torch/version.py as text, next to its dist-info.
_PROBE = r"""
import json, os, re, sys
wanted = set(json.loads(sys.argv[1]))
found, cuda = {}, None
for entry in sys.path:
    try:
        names = os.listdir(entry or ".")
    except OSError:
        continue
    for d in names:
        if not d.endswith((".dist-info", ".egg-info")):
            continue
        name, _, version = d.rsplit(".", 1)[0].partition("-")
        key = re.sub(r"[-_.]+", "-", name).lower()
        if key not in wanted or key in found or not version:
            continue
        found[key] = version.split("-py")[0]
        if key == "torch":
            try:
                with open(os.path.join(entry, "torch", "version.py"), encoding="utf-8") as f:
                    m = re.search(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)", f.read(), re.M)
                cuda = m.group(1) if m else None
            except OSError:
                pass
print(json.dumps({"python": "%d.%d.%d" % sys.version_info[:3], "packages": found, "cuda": cuda}))
"""


def _venv_python(prefix: Path) -> Path | None:
    for name in ("bin/python", "bin/python3", "Scripts/python.exe"):
        if (prefix / name).exists():
            return prefix / name
    return None


def locate(repo_root: Path, environ: Mapping[str, str]) -> EnvFacts:
    """Pick the environment and its activate command, without running anything."""
    modules = environ.get("LOADEDMODULES", "").strip(":")
    prefix = f"module load {' '.join(m for m in modules.split(':') if m)}; " if modules else ""
    notes = [f"HPC modules loaded: {modules.replace(':', ' ')}"] if modules else []

    def env(kind: str, name: str | None, activate: str, python: Path | str | None) -> EnvFacts:
        return EnvFacts(kind=kind, name=name, activate=prefix + activate, python=str(python) if python else None,
                        notes=notes)

    if environ.get("VIRTUAL_ENV"):
        venv = Path(environ["VIRTUAL_ENV"])
        return env("venv", venv.name, f"source {_rel(venv, repo_root)}/bin/activate", _venv_python(venv))
    if environ.get("CONDA_DEFAULT_ENV") and environ.get("CONDA_PREFIX"):
        name = environ["CONDA_DEFAULT_ENV"]
        return env("conda", name, f"conda activate {name}", _venv_python(Path(environ["CONDA_PREFIX"])))
    for d in (".venv", "venv", "env", ".env"):
        cand = repo_root / d
        if (cand / "pyvenv.cfg").is_file():
            kind = "uv" if (repo_root / "uv.lock").exists() else "venv"
            return env(kind, d, f"source {d}/bin/activate", _venv_python(cand))
    if (repo_root / "uv.lock").exists():
        return env("uv", None, "uv sync && source .venv/bin/activate", None)
    if (repo_root / "poetry.lock").exists():
        return env("poetry", None, "eval $(poetry env activate)", None)
    if (repo_root / "pixi.toml").exists() or (repo_root / "pixi.lock").exists():
        return env("pixi", None, 'eval "$(pixi shell-hook)"', None)
    for f in ("environment.yml", "environment.yaml"):
        name = _conda_file_name(repo_root / f)
        if name:
            return env("conda-file", name, f"conda activate {name}", None)
    python = shutil.which("python3", path=environ.get("PATH")) or shutil.which("python", path=environ.get("PATH"))
    if modules:
        return env("modules", None, prefix.rstrip("; "), python)
    activate = f"export PATH={Path(python).parent}:$PATH" if python else ""
    return EnvFacts(kind="system", activate=activate, python=python,
                    notes=["no virtual environment found; system Python"])


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def _conda_file_name(path: Path) -> str | None:
    try:
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("name:"):
                return line.split(":", 1)[1].strip().strip("'\"") or None
    except OSError:
        return None
    return None


def read_versions(facts: EnvFacts, timeout: float = PROBE_TIMEOUT_S) -> EnvFacts:
    """Fill in python/torch/library versions from the environment's interpreter."""
    if not facts.python:
        facts.error = "no interpreter found for this environment"
        return facts
    if not os.access(facts.python, os.X_OK):
        facts.error = f"interpreter {facts.python} is missing or not executable"
        return facts
    try:
        proc = children.run([facts.python, "-I", "-c", _PROBE, json.dumps(PACKAGES)], timeout)
    except subprocess.TimeoutExpired:
        facts.error = f"interpreter {facts.python} did not answer within {timeout:g} s"
        return facts
    except OSError as e:
        facts.error = f"interpreter {facts.python} could not start: {e.strerror or e}"
        return facts
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        facts.error = f"interpreter {facts.python} failed: {last[:200]}"
        return facts
    facts.python_version = data["python"]
    pkgs = data["packages"]
    facts.torch = pkgs.get("torch")
    facts.torch_cuda = data.get("cuda")
    facts.packages = [PackageVersion(name=n, version=v) for n, v in sorted(pkgs.items())]
    return facts


def detect_environment(repo_root: str | os.PathLike[str], environ: Mapping[str, str] | None = None,
                       timeout: float = PROBE_TIMEOUT_S) -> EnvFacts:
    return read_versions(locate(Path(repo_root), os.environ if environ is None else environ), timeout)
