"""The command line, run as a user runs it: subprocesses, exit codes, one-line messages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import full_state

from wamf_tui.contract import render as contract


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wamf_tui", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


def test_check_exit_codes(tmp_path):
    good = tmp_path / "good.md"
    good.write_text(contract.render(full_state(), contract.bundled_template()))
    bad = tmp_path / "bad.md"
    bad.write_text(good.read_text().replace("python train.py --steps 30", "<the command that runs the job>"))
    ok = run("check", str(good))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    fail = run("check", str(bad))
    assert fail.returncode == 1
    assert f"{bad}:13: placeholder <the command that runs the job>" in fail.stdout
    missing = run("check", str(tmp_path / "nope.md"))
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"wamf-tui: cannot read {tmp_path / 'nope.md'}: No such file or directory"
    binary = tmp_path / "bin.md"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    assert run("check", str(binary)).returncode == 2


def test_subcommands_do_not_import_textual_or_torch(tmp_path, repo):
    good = tmp_path / "good.md"
    good.write_text(contract.render(full_state(), contract.bundled_template()))
    probe = (
        "import sys, runpy; sys.argv = ['wamf-tui'] + sys.argv[1:]\n"
        "from wamf_tui.cli import main\n"
        "code = main(sys.argv[1:])\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'torch'))\n"
        "print('IMPORTED', bad)\n"
    )
    for args in (["check", str(good)], ["detect", str(repo)], ["detect", str(repo), "--json"],
                 ["detect", str(repo), "--stream"],
                 ["analyze", str(repo / "train.py")]):
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, timeout=120)
        assert "IMPORTED []" in out.stdout, (args, out.stdout[-500:], out.stderr[-500:])


def test_detect_imports_neither_psutil_nor_nvml_where_no_driver_is(repo):
    """`detect` on a machine without the NVIDIA driver: nothing to ask NVML, so nvidia-ml-py is not imported,
    and the CPU count and memory come from the kernel without psutil (each cost a tenth of detect here)."""
    from wamf_tui.detect.hardware import DRIVER_FILES

    if any(Path(f).exists() for f in DRIVER_FILES):
        pytest.skip("this machine has an NVIDIA driver: NVML is asked")
    probe = ("import sys\nfrom wamf_tui.cli import main\nmain(sys.argv[1:])\n"
             "print('IMPORTED', sorted(m for m in ('psutil', 'pynvml') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", probe, "detect", str(repo), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert "IMPORTED []" in out.stdout, out.stderr[-500:]
    hardware = json.loads(out.stdout[:out.stdout.rindex("IMPORTED")])["hardware"]
    import psutil

    assert hardware["cpu_cores"] == psutil.cpu_count() and abs(
        hardware["ram_gib"] - psutil.virtual_memory().total / 2**30) < 0.1
    assert hardware["nvml_error"] == "no NVIDIA GPU visible on this machine (no NVIDIA driver loaded)"


def test_version_and_help():
    assert run("--version").stdout.startswith("wamf-tui ")
    help_text = run("--help").stdout
    for word in ("--demo", "--contract", "--template", "check CONTRACT"):
        assert word in help_text


def test_bad_paths_are_one_line_messages(tmp_path):
    gone = run(str(tmp_path / "missing"))
    assert gone.returncode == 2 and gone.stderr.strip() == f"wamf-tui: no such directory: {tmp_path / 'missing'}"
    tpl = run(str(tmp_path), "--template", str(tmp_path / "none.md"))
    assert tpl.returncode == 2 and tpl.stderr.count("\n") == 1 and "cannot use template" in tpl.stderr
    assert "Traceback" not in gone.stderr + tpl.stderr


def test_a_terminal_that_cannot_draw_the_app_gets_a_pointer_to_answers(tmp_path):
    from conftest import make_repo

    root = make_repo(tmp_path / "job")
    out = subprocess.run([sys.executable, "-m", "wamf_tui", str(root)], capture_output=True, text=True,
                         env={**os.environ, "TERM": "dumb"}, timeout=60)
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--answers FILE --yes" in out.stderr and "Traceback" not in out.stderr


def test_tbd_is_refused_at_the_question_not_at_step_4():
    from wamf_tui import flow
    from wamf_tui.model import InitState, Step

    state = InitState(step=Step.JOB)
    q = flow.current(state)
    new, got = flow.answer(state, "TBD")
    assert q.key == "repo" and got.action == "stay" and "TBD" in got.error and new.repo == state.repo == ""


def test_check_repo_fails_on_a_flag_it_cannot_prove(tmp_path):
    """`parse_known_args` passes an unknown flag on silently: the check cannot prove `--epochz` is the job's,
    so it fails (it used to warn and pass); a flag the parser declares passes."""
    root = tmp_path / "job"
    root.mkdir()
    (root / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\np.add_argument('--epochs')\n"
                                   "args, rest = p.parse_known_args()\n")
    text = contract.render(full_state(), contract.bundled_template())
    good = tmp_path / "good.md"
    good.write_text(text.replace("python train.py --steps 30", "python train.py --epochs 1"))
    bad = tmp_path / "bad.md"
    bad.write_text(text.replace("python train.py --steps 30", "python train.py --epochz 1"))
    ok = run("check", str(good), "--repo", str(root))
    assert ok.returncode == 0, ok.stdout
    fail = run("check", str(bad), "--repo", str(root))
    said = ":13: run: cannot prove: --epochz: not declared, and train.py reads its flags with parse_known_args"
    assert fail.returncode == 1 and said in fail.stdout


def test_check_repo_takes_the_repos_own_command_as_proof_of_its_flags(tmp_path):
    """A parser the reading cannot model (simple_parsing): the README's own command proves its flags, so
    `check --repo` passes the line that uses them and fails one with a flag no one proves."""
    root = tmp_path / "job"
    root.mkdir()
    (root / "train.py").write_text("import simple_parsing\nimport torch\ncfg = simple_parsing.parse(Config)\n"
                                   "for x in data:\n    loss = model(x)\n    loss.backward()\n    opt.step()\n")
    (root / "README.md").write_text("```bash\npython train.py --model gpt2 --batch_size 8\n```\n")
    text = contract.render(full_state(), contract.bundled_template())
    good = tmp_path / "good.md"
    good.write_text(text.replace("python train.py --steps 30", "python train.py --model gpt2 --batch_size 4"))
    bad = tmp_path / "bad.md"
    bad.write_text(text.replace("python train.py --steps 30", "python train.py --model gpt2 --log_to_wandb 0"))
    assert run("check", str(good), "--repo", str(root)).returncode == 0
    fail = run("check", str(bad), "--repo", str(root))
    assert fail.returncode == 1 and "run: cannot prove: --log_to_wandb: " in fail.stdout


def test_analyze_reads_an_entry_a_console_scripts_dispatcher_serves_with_that_functions_flags(tmp_path):
    """litgpt's shape: `tool pretrain` runs `setup` of pkg/pretrain.py through jsonargparse's CLI; the file has
    no CLI of its own, so `analyze pkg/pretrain.py` finds the dispatcher and reads setup's parameters."""
    from conftest import make_repo

    root = make_repo(tmp_path / "job", {
        "pyproject.toml": "[project]\nname = 'pkg'\n[project.scripts]\ntool = 'pkg.__main__:main'\n",
        "pkg/__init__.py": "",
        "pkg/__main__.py": "from jsonargparse import CLI\nfrom pkg.pretrain import setup\n\n"
                           "def main():\n    CLI({'pretrain': setup})\n",
        "pkg/pretrain.py": "from pathlib import Path\nimport torch\n\n"
                           "def setup(out_dir: Path = Path('out/pretrain'), max_steps: int = 100,\n"
                           "          warmup_steps: int = 10):\n"
                           "    model = torch.nn.Linear(2, 2)\n"
                           "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                           "    for _ in range(max_steps):\n        model(torch.ones(2)).sum().backward()\n"
                           "        opt.step()\n"})
    out = run("analyze", str(root / "pkg/pretrain.py"), "--repo", str(root), "--json")
    assert out.returncode == 0, out.stderr
    a = json.loads(out.stdout)
    assert a["config_system"] == "jsonargparse"
    assert {c["name"]: c["role"] for c in a["step_controls"]} == {"--max_steps": "bound", "--warmup_steps": "scale"}
    assert [o["off_switch"] for o in a["output_dirs"]] == ["--out_dir=..."]


def test_analyze_into_a_pipe_closed_early_ends_without_a_traceback(tmp_path):
    """`wamf-tui analyze train.py | head`: the reader stops reading; the app stops writing, quietly."""
    (tmp_path / "train.py").write_text("import torch\n" + "".join(f"torch.save(m, 'f{i}')\n" for i in range(5000)))
    p = subprocess.Popen([sys.executable, "-m", "wamf_tui", "analyze", str(tmp_path / "train.py"), "--repo",
                          str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=120) == 1 and b"Traceback" not in err and b"BrokenPipe" not in err
