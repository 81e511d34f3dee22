"""Non-interactive runs: `--answers FILE --yes` writes the contract with the same checks as the app."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from wamf_tui import demo_repo
from wamf_tui.contract import render as contract


def run(*args: str, home: Path) -> subprocess.CompletedProcess:
    import os

    return subprocess.run([sys.executable, "-m", "wamf_tui", *args], capture_output=True, text=True, timeout=180,
                          env={**os.environ, "XDG_STATE_HOME": str(home)})


@pytest.mark.parametrize("fmt", ["json", "toml"])
def test_answers_file_writes_a_passing_contract(tmp_path, state_home, fmt):
    repo = demo_repo.make_demo(str(tmp_path))
    answers = tmp_path / f"answers.{fmt}"
    if fmt == "json":
        answers.write_text('{"reader": "MLSys engineer, could do this myself", "steps": "40",'
                           ' "hints": ["slow steady step"], "hands_off": "data/"}')
    else:
        answers.write_text('reader = "MLSys engineer, could do this myself"\nsteps = "40"\n'
                           'hints = ["slow steady step"]\nhands_off = "data/"\n')
    out = run(str(repo), "--answers", str(answers), "--yes", home=state_home)
    assert out.returncode == 0, out.stderr
    assert "/who-ate-my-flops:optimize" in out.stdout and "$who-ate-my-flops:optimize" in out.stdout
    text = (repo / "contract.md").read_text()
    assert contract.check(text) == []
    assert "reader          MLSys engineer, could do this myself" in text
    assert "--steps=40" in text and "| **Hints** | slow steady step |" in text
    assert "| **Hands off** | data/;" in text


def test_answers_refusals_are_one_line(tmp_path, state_home):
    repo = demo_repo.make_demo(str(tmp_path))
    bad = tmp_path / "bad.json"
    bad.write_text('{"run": "python <script>"}')
    out = run(str(repo), "--answers", str(bad), "--yes", home=state_home)
    assert out.returncode == 1 and out.stderr.startswith("wamf-tui: answer refused: run: <script>")
    typo = tmp_path / "typo.json"
    typo.write_text('{"readr": "x"}')
    out = run(str(repo), "--answers", str(typo), "--yes", home=state_home)
    assert out.returncode == 2 and "unknown answer 'readr'" in out.stderr
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    out = run(str(repo), "--answers", str(broken), "--yes", home=state_home)
    assert out.returncode == 2 and "is not valid JSON" in out.stderr and "Traceback" not in out.stderr
    assert run(str(repo), "--yes", home=state_home).stderr == "wamf-tui: --yes needs --answers FILE\n"
    assert not (repo / "contract.md").exists()


def test_yes_keeps_the_old_contract_as_backup(tmp_path, state_home):
    repo = demo_repo.make_demo(str(tmp_path))
    (repo / "contract.md").write_text("# old\n")
    answers = tmp_path / "a.json"
    answers.write_text("{}")
    out = run(str(repo), "--answers", str(answers), "--yes", home=state_home)
    assert out.returncode == 0, out.stderr
    assert (repo / "contract.md.bak").read_text() == "# old\n"
    assert "kept as" in out.stdout


def test_accuracy_mode_and_the_whole_job(tmp_path, state_home):
    """`steps = "all"` keeps the whole job; accuracy mode turns deterministic algorithms on and makes checks exact."""
    repo = demo_repo.make_demo(str(tmp_path))
    answers = tmp_path / "answers.toml"
    answers.write_text('reader = "MLSys"\nsteps = "all"\nmode = "accuracy"\n')
    out = run(str(repo), "--answers", str(answers), "--yes", home=state_home)
    assert out.returncode == 0, out.stderr
    text = (repo / "contract.md").read_text()
    assert contract.check(text) == []
    run_line = next(x for x in text.splitlines() if x.startswith("run "))
    assert "WAMF_DETERMINISTIC=1" in run_line and "WAMF_MAX_STEPS" not in run_line
    assert "--steps 200" in run_line and "--steps=" not in run_line  # the job's own length, uncut
    assert "Benchmark mode: accuracy" in text and "bit-exact" in text
    bad = tmp_path / "bad.toml"
    bad.write_text('steps = "lots"\n')
    out = run(str(repo), "--answers", str(bad), "--yes", home=state_home)
    assert out.returncode == 1 and "refused: steps: " in out.stderr and ", or all" in out.stderr


def test_an_answers_file_naming_only_the_script_gets_that_scripts_command(tmp_path):
    """Not the top candidate's: `script` picks the job, and the app finds how the repo starts it."""
    from conftest import make_repo

    from wamf_tui import answers
    from wamf_tui.detect.run import detect_all
    from wamf_tui.session import store as session

    loop = "import torch\nfor s in range(9):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
    root = make_repo(tmp_path / "job", {"a/README.md": "```\ntorchrun --nproc_per_node=2 train.py\n```\n",
                                        "a/train.py": loop, "b/train.py": loop,
                                        "b/README.md": "```\npython train.py --lr 1\n```\n"})
    for script, command in (("a/train.py", "cd a && torchrun --nproc_per_node=2 train.py"),
                            ("b/train.py", "cd b && python train.py --lr 1")):
        state = session.new_state(root)
        state = state.model_copy(update={"detected": detect_all(root)})
        state, refused = answers.fill(state, {"script": script})
        assert refused == []
        assert (state.script, state.command) == (script, command)
