"""The built wheel, installed into a fresh venv, works from outside the source tree."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wamf_tui.contract import render as contract

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_wheel_installs_and_runs(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel = next(dist.glob("wamf_tui-*.whl"))
    venv = tmp_path / "venv"
    # system site packages stand in for the already-downloaded dependencies; the project itself comes from the wheel
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    subprocess.run([venv / "bin/python", "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True,
                   capture_output=True, timeout=300)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    version = subprocess.run([venv / "bin/wamf-tui", "--version"], capture_output=True, text=True, cwd=outside)
    assert version.returncode == 0 and version.stdout.startswith("wamf-tui ")
    good = outside / "contract.md"
    from helpers import full_state

    good.write_text(contract.render(full_state(), contract.bundled_template()))
    where = subprocess.run([venv / "bin/python", "-c", "import wamf_tui, sys; print(wamf_tui.__file__)"],
                           capture_output=True, text=True, cwd=outside).stdout
    assert str(venv) in where, where
    check = subprocess.run([venv / "bin/wamf-tui", "check", str(good)], capture_output=True, text=True, cwd=outside)
    assert check.returncode == 0, check.stdout + check.stderr
    tpl = subprocess.run([venv / "bin/python", "-c", "from wamf_tui.contract.render import bundled_template as b; "
                          "print(b()[:20])"], capture_output=True, text=True, cwd=outside)
    assert tpl.stdout.startswith("# Campaign contract")
