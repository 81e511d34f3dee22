"""`activate` is the job's environment: an activated virtual environment that is wamf-tui's own and holds no
torch (activated to start the tool) is never proposed; one the tool was installed into beside torch stays."""

from __future__ import annotations

import sys
from pathlib import Path

from wamf_tui.detect.environment import detect_environment


def venv(folder: Path, torch: bool = False) -> Path:
    """A virtual environment as its files show it: pyvenv.cfg, an interpreter, site-packages."""
    site = folder / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    (folder / "bin").mkdir()
    (folder / "bin" / "python").symlink_to(sys.executable)
    (site / "wamf_tui-0.1.dist-info").mkdir()
    if torch:
        (site / "torch-2.13.0.dist-info").mkdir()
    return folder


def test_the_tools_own_activated_environment_is_not_the_jobs(tmp_path, monkeypatch):
    own = venv(tmp_path / "tool")
    job = tmp_path / "job"
    venv(job / ".venv", torch=True)
    monkeypatch.setattr(sys, "prefix", str(own))
    env = detect_environment(job, environ={"VIRTUAL_ENV": str(own), "PATH": ""})
    assert (env.kind, env.activate) == ("venv", "source .venv/bin/activate")
    assert "the activated tool is wamf-tui's own environment, without torch: not the job's" in env.notes


def test_an_environment_holding_torch_stays_the_jobs_even_with_the_tool_in_it(tmp_path, monkeypatch):
    own = venv(tmp_path / "work", torch=True)
    monkeypatch.setattr(sys, "prefix", str(own))
    env = detect_environment(tmp_path / "job", environ={"VIRTUAL_ENV": str(own), "PATH": ""})
    assert (env.kind, env.activate, env.torch) == ("venv", f"source {own}/bin/activate", "2.13.0")


def test_another_activated_environment_is_the_jobs(tmp_path):
    other = venv(tmp_path / "other")
    env = detect_environment(tmp_path / "job", environ={"VIRTUAL_ENV": str(other), "PATH": ""})
    assert env.activate == f"source {other}/bin/activate"


def test_torch_a_pth_file_adds_counts_as_the_environments(tmp_path, monkeypatch):
    """A venv made on another's packages (a `.pth` naming their folder, as the demo's test builds one):
    the interpreter imports torch from there, so the environment holds torch and stays the job's."""
    shared = tmp_path / "shared-site"
    (shared / "torch-2.13.0.dist-info").mkdir(parents=True)
    own = venv(tmp_path / "work")
    (own / "lib" / "python3.11" / "site-packages" / "deps.pth").write_text(f"import os\n{shared}\nrelative/x\n")
    monkeypatch.setattr(sys, "prefix", str(own))
    env = detect_environment(tmp_path / "job", environ={"VIRTUAL_ENV": str(own), "PATH": ""})
    assert (env.activate, env.torch) == (f"source {own}/bin/activate", "2.13.0")
