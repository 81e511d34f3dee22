"""Which Python environment the job uses, how to enter it, and what is installed.

Everything is read from files: `pyvenv.cfg`, `conda-meta/`, and the `*.dist-info` /
`*.egg-info` folder names in the environment's site-packages. The environment's interpreter
is never started: a repo can ship `.venv/bin/python` as a script of its own, and a real one
runs the venv's `.pth` files and `sitecustomize.py`. torch is never imported.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..infra.files import read_regular, rel_path
from ..model import EnvFacts, PackageVersion

PACKAGES = (
    "torch", "triton", "numpy", "nvidia-cudnn-cu12", "nvidia-cudnn-cu11", "transformers", "accelerate",
    "deepspeed", "lightning", "pytorch-lightning", "flash-attn", "apex", "xformers", "peft",
    "datasets", "hydra-core", "omegaconf", "wandb", "vllm", "megatron-core", "bitsandbytes", "timm",
)
MAX_CFG_BYTES = 64 * 1024
LOCKS = {"uv": "uv.lock", "poetry": "poetry.lock", "pixi": "pixi.lock"}  # where a project not yet installed pins
MAKES = {"uv": "uv sync", "poetry": "poetry install", "pixi": "pixi install"}  # its versions, and what installs it
_CUDA = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)", re.M)
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


def _venv_python(prefix: Path) -> Path | None:
    for name in ("bin/python", "bin/python3", "Scripts/python.exe"):
        if (prefix / name).is_symlink() or (prefix / name).exists():  # a dangling link is reported as missing
            return prefix / name
    return None


def locate(repo_root: Path, environ: Mapping[str, str]) -> EnvFacts:
    """Pick the environment and its activate command, without running anything."""
    modules = environ.get("LOADEDMODULES", "").strip(":")
    prefix = f"module load {' '.join(shlex.quote(m) for m in modules.split(':') if m)}; " if modules else ""
    notes = [f"HPC modules loaded: {modules.replace(':', ' ')}"] if modules else []

    def env(kind: str, name: str | None, activate: str, python: Path | str | None) -> EnvFacts:
        return EnvFacts(kind=kind, name=name, activate=prefix + activate, python=str(python) if python else None,
                        notes=notes)

    venv = Path(environ["VIRTUAL_ENV"]) if environ.get("VIRTUAL_ENV") else None
    if venv is not None and _tool_only(venv):  # activated to start wamf-tui, not to run the job
        notes = [*notes, f"the activated {venv.name} is wamf-tui's own environment, without torch: not the job's"]
    elif venv is not None:
        return env("venv", venv.name, f"source {shlex.quote(rel_path(venv, repo_root) + '/bin/activate')}",
                   _venv_python(venv))
    if environ.get("CONDA_DEFAULT_ENV") and environ.get("CONDA_PREFIX"):
        name = environ["CONDA_DEFAULT_ENV"]
        return env("conda", name, f"conda activate {shlex.quote(name)}", _venv_python(Path(environ["CONDA_PREFIX"])))
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
        made = repo_root / ".pixi" / "envs" / "default"  # a conda-style prefix, once `pixi install` ran
        return env("pixi", "default", 'eval "$(pixi shell-hook)"', _venv_python(made) if made.is_dir() else None)
    for f in ("environment.yml", "environment.yaml"):
        named = _conda_file_name(repo_root / f)
        if named:
            return env("conda-file", named, f"conda activate {shlex.quote(named)}", None)  # the repo's text
    search = _without_own(environ.get("PATH", ""))  # the app's own venv is on PATH to run it, not the job's
    python = shutil.which("python3", path=search) or shutil.which("python", path=search)
    if modules:
        return env("modules", None, prefix.rstrip("; "), python)
    activate = f'export PATH={shlex.quote(str(Path(python).parent))}:"$PATH"' if python else ""
    return EnvFacts(kind="system", activate=activate, python=python,
                    notes=["no virtual environment found; system Python"])


def _tool_only(venv: Path) -> bool:
    """Whether `venv` is the environment wamf-tui itself runs from and holds no torch: the tool's, never the
    job's (a job's environment the tool was installed into holds torch, and stays the job's)."""
    if not _same(venv, Path(sys.prefix)):
        return False
    cfg = _pyvenv_cfg(venv)
    return not any(name == "torch" for site in _site_dirs(venv, cfg, "venv", None) for name, _ in _distributions(site))


def _without_own(path: str) -> str:
    """`PATH` less the folder of the interpreter running wamf-tui: found first because the app was started
    from it (its own venv, first on PATH), it is the tool's environment, never the job's."""
    own = Path(sys.executable).parent
    kept = [d for d in path.split(os.pathsep) if d and not _same(Path(d), own)]
    return os.pathsep.join(kept)


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _conda_file_name(path: Path) -> str | None:
    for line in (_read_small(path) or "").splitlines():
        if line.startswith("name:"):
            return line.split(":", 1)[1].strip().strip("'\"") or None
    return None


def read_versions(facts: EnvFacts, repo_root: Path | None = None) -> EnvFacts:
    """Fill in python/torch/library versions from the environment's files (or, for a uv or poetry
    project whose environment is not made yet, from its lock file)."""
    lock = repo_root / LOCKS[facts.kind] if repo_root is not None and facts.kind in LOCKS else None
    if not facts.python and lock is not None and lock.is_file():
        locked = {n: v for n, v in _locked(lock) if n in PACKAGES}
        facts.torch = locked.get("torch")
        facts.packages = [PackageVersion(name=n, version=v) for n, v in sorted(locked.items())]
        facts.notes = [*facts.notes, f"versions from {lock.name}; the environment itself is made by "
                       f"{MAKES[facts.kind]}"]
        return facts
    if not facts.python:
        facts.error = "no interpreter found for this environment"
        return facts
    python = Path(facts.python)
    if not python.exists():  # a dangling link: the base interpreter or its manager is gone
        facts.error = f"interpreter {facts.python} is missing"
        return facts
    prefix = python.parent.parent
    cfg = _pyvenv_cfg(prefix)
    version = _python_version(prefix, python, cfg)
    facts.python_version = version
    found: dict[str, str] = {}
    for site in _site_dirs(prefix, cfg, facts.kind, version):
        for name, ver in _distributions(site):
            if name in PACKAGES and name not in found:
                found[name] = ver
                if name == "torch":
                    facts.torch_cuda = _torch_cuda(site)
    facts.torch = found.get("torch")
    facts.packages = [PackageVersion(name=n, version=v) for n, v in sorted(found.items())]
    return facts


_PIXI_NAME = re.compile(r"[ \t]*-?[ \t]*name:[ \t]*['\"]?([\w.-]+)['\"]?[ \t]*")
_PIXI_VERSION = re.compile(r"[ \t]*version:[ \t]*['\"]?([\w.+!-]+)")
_PIXI_CONDA = re.compile(r"[ \t]*-[ \t]*conda:[ \t]*(\S+)[ \t]*")
_CONDA_NAME = re.compile(r"[A-Za-z][\w.-]*")
_CONDA_VERSION = re.compile(r"\d[\w.+!]*")
_TOML_NAME = re.compile(r'name[ \t]*=[ \t]*"([^"]+)"[ \t]*')
_TOML_VERSION = re.compile(r'version[ \t]*=[ \t]*"([^"]+)"')
LONGEST_LOCK_LINE = 2048  # a package's line is short; a longer one is skipped, so no pattern sees more


def _locked(lock: Path) -> list[tuple[str, str]]:
    """(normalised name, version) of every package a uv.lock, poetry.lock or pixi.lock pins. Only the lines
    holding a key are looked at, each pattern on one short line: linear in the file's size, whatever the
    file holds (a pattern over the whole text backtracked for minutes on a file of blank lines)."""
    text = _read_small(lock, 16 * 1024 * 1024) or ""
    found: list[tuple[str, str]] = []
    if lock.name == "pixi.lock":  # YAML: `name:`/`version:` keys, or a conda package named by its URL only
        for line, after, _ in _lines_holding(text, _PIXI_KEYS):
            name, conda = _PIXI_NAME.fullmatch(line), _PIXI_CONDA.fullmatch(line)
            version = _PIXI_VERSION.match(after) if name else None
            if name and version:
                found.append((name.group(1), version.group(1)))
            elif conda and (package := _conda_package(conda.group(1))):
                found.append(package)
        return [(("torch" if n.lower() == "pytorch" else re.sub(r"[-_.]+", "-", n).lower()), v) for n, v in found]
    for head, line, after in _lines_holding(text, _TOML_PACKAGE):
        name, version = _TOML_NAME.fullmatch(line), _TOML_VERSION.match(after)
        if head.rstrip() == "[[package]]" and name and version:
            found.append((re.sub(r"[-_.]+", "-", name.group(1)).lower(), version.group(1)))
    return found


_PIXI_KEYS = re.compile("name:|conda:")
_TOML_PACKAGE = re.compile(re.escape("[[package]]"))


def _line_at(text: str, start: int) -> tuple[str, int]:
    """(the line that starts at `start`, where the next one starts); the line is "" past the end of the
    text or when over LONGEST_LOCK_LINE."""
    if start > len(text):
        return "", start
    end = text.find("\n", start)
    end = len(text) if end == -1 else end
    return (text[start:end] if end - start <= LONGEST_LOCK_LINE else ""), end + 1


def _lines_holding(text: str, key: re.Pattern[str]) -> Iterator[tuple[str, str, str]]:
    """(line, the next line, the one after) for each line of `text` holding `key`, in order. `key` is a
    literal, found in linear time; a line over LONGEST_LOCK_LINE is skipped."""
    m = key.search(text)
    while m:
        start = text.rfind("\n", 0, m.start()) + 1
        line, after = _line_at(text, start)
        if line:
            second, third = _line_at(text, after)
            yield line, second, _line_at(text, third)[0]
        m = key.search(text, after)


def _conda_package(url: str) -> tuple[str, str] | None:
    """(name, version) of a conda package file's URL, `.../name-version-build.conda`: the name may hold
    dashes, the version is the first dash-separated part after it that starts with a digit."""
    base = url.rpartition("/")[2]
    stem = base.removesuffix(".conda") if base.endswith(".conda") else base.removesuffix(".tar.bz2")
    if stem == base or not url.count("/"):
        return None
    parts = stem.split("-")
    for i in range(1, len(parts) - 1):
        if _CONDA_VERSION.fullmatch(parts[i]) and _CONDA_NAME.fullmatch(name := "-".join(parts[:i])):
            return name, parts[i]
    return None


def _read_small(path: Path, limit: int = MAX_CFG_BYTES) -> str | None:
    """A regular file's text, at most `limit` bytes of it; None for anything else (a FIFO never blocks)."""
    try:
        return read_regular(path, limit).decode("utf-8", errors="replace")
    except OSError:
        return None


def _pyvenv_cfg(prefix: Path) -> dict[str, str]:
    text = _read_small(prefix / "pyvenv.cfg") or ""
    pairs = (line.partition("=") for line in text.splitlines() if "=" in line)
    return {k.strip().lower(): v.strip() for k, _, v in pairs}


def _python_version(prefix: Path, python: Path, cfg: Mapping[str, str]) -> str | None:
    """From pyvenv.cfg, conda's record of its python package, the interpreter's file name, or the
    one `lib/pythonX.Y` folder, in that order."""
    for key in ("version", "version_info"):
        m = _VERSION.match(cfg.get(key, ""))
        if m:
            return ".".join(g for g in m.groups() if g)
    try:
        conda = sorted((prefix / "conda-meta").glob("python-[0-9]*.json"))
    except OSError:
        conda = []
    for record in conda:
        try:
            version = json.loads(_read_small(record) or "{}").get("version", "")
        except ValueError:
            continue
        if isinstance(version, str) and _VERSION.match(version):
            return version
    m = re.fullmatch(r"python(\d+\.\d+)", python.resolve().name)
    if m:
        return m.group(1)
    libs = _lib_dirs(prefix)
    return libs[0].name.removeprefix("python") if len(libs) == 1 else None


def _lib_dirs(prefix: Path) -> list[Path]:
    try:
        return sorted(p for p in (prefix / "lib").glob("python3.*") if p.is_dir())
    except OSError:
        return []


def _site_dirs(prefix: Path, cfg: Mapping[str, str], kind: str, version: str | None) -> Iterator[Path]:
    """The folders the interpreter would import from, in its order, as far as files tell: each site folder,
    then the folders its `.pth` files add (as `site` adds them, without running their `import` lines)."""
    for site in _sites(prefix, cfg, kind, version):
        yield site
        yield from _pth_dirs(site)


def _pth_dirs(site: Path) -> Iterator[Path]:
    """The absolute folders a site folder's `.pth` files name (a venv made on another's packages)."""
    try:
        names = sorted(n for n in os.listdir(site) if n.endswith(".pth"))[:50]
    except OSError:
        return
    for name in names:
        for line in (_read_small(site / name) or "").splitlines()[:50]:
            path = Path(line.strip())
            if path.is_absolute() and not line.startswith(("import ", "import\t")) and path.is_dir():
                yield path


def _sites(prefix: Path, cfg: Mapping[str, str], kind: str, version: str | None) -> Iterator[Path]:
    minor = ".".join((version or "").split(".")[:2])
    libs = [prefix / "lib" / f"python{minor}"] if minor else _lib_dirs(prefix)
    for lib in libs:
        yield lib / "site-packages"
        yield lib / "dist-packages"
    yield prefix / "Lib" / "site-packages"
    if kind == "system" or cfg.get("include-system-site-packages", "").lower() == "true":
        if minor and kind == "system":
            yield Path.home() / ".local" / "lib" / f"python{minor}" / "site-packages"
        base = Path(cfg["home"]).parent if cfg.get("home") else None
        for root in ([base] if base else []) + ([Path("/usr/local"), Path("/usr")] if kind == "system" else []):
            for lib in ([root / "lib" / f"python{minor}"] if minor else _lib_dirs(root)):
                yield lib / "site-packages"
                yield lib / "dist-packages"
        if kind == "system":
            yield Path("/usr/lib/python3/dist-packages")


def _distributions(site: Path) -> Iterator[tuple[str, str]]:
    """(normalised name, version) for every `*.dist-info` / `*.egg-info` folder name in `site`."""
    try:
        names = os.listdir(site)
    except OSError:
        return
    for d in names:
        if not d.endswith((".dist-info", ".egg-info")):
            continue
        name, _, version = d.rsplit(".", 1)[0].partition("-")
        if version:
            yield re.sub(r"[-_.]+", "-", name).lower(), version.split("-py")[0]


def _torch_cuda(site: Path) -> str | None:
    """torch's CUDA build, from `torch/version.py` read as text."""
    m = _CUDA.search(_read_small(site / "torch" / "version.py") or "")
    return m.group(1) if m else None


def detect_environment(repo_root: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> EnvFacts:
    root = Path(repo_root)
    return read_versions(locate(root, os.environ if environ is None else environ), root)


def installed(env: EnvFacts | None, activate: str) -> dict[str, str]:
    """The library versions of the environment the job runs in: the detected one's, while the activate line
    is still the one detected (another line the user typed is another environment, unread)."""
    if env is None or env.error or (env.activate or "") != activate:
        return {}
    return {p.name: p.version for p in env.packages}
