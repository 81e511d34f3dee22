"""Step 4's work, shared by the app and `--yes` (`wamf_tui.contract.finish`): problems placed on the contract's
lines, and the wrapper written only with a written contract that needs it."""

from __future__ import annotations

from conftest import make_repo
from helpers import full_state

from wamf_tui.contract import finish
from wamf_tui.contract import render as contract
from wamf_tui.model import BenchmarkChange
from wamf_tui.propose.validate import Verdict


def _state(tmp_path, wrapper: bool):
    root = make_repo(tmp_path / "job", {"train.py": "import torch\nloss.backward()\n"})
    (tmp_path / "out").mkdir()
    return full_state().model_copy(update={
        "repo_path": str(root), "contract_path": str(tmp_path / "out" / "contract.md"),
        "changes": [BenchmarkChange(what="cap", how="WAMF_MAX_STEPS=30 (wrapper)", why="", env=["WAMF_MAX_STEPS=30"],
                                    enabled=wrapper)]})


def test_a_run_line_problem_is_said_on_the_run_line(tmp_path):
    st = _state(tmp_path, wrapper=False)
    text = contract.render(st, contract.load_template(None))
    run_line = next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith("run "))
    assert finish.problems(text, Verdict()) == []
    assert finish.problems(text, Verdict(problems=["--x is not an option of train.py"])) == [
        (run_line, "run: --x is not an option of train.py")]
    broken = text.replace(f"run             {st.run}", "run             TBD")
    assert [line for line, _ in finish.problems(broken, Verdict())] == [run_line]


def test_the_wrapper_comes_only_with_a_written_contract_that_needs_it(tmp_path):
    st = _state(tmp_path, wrapper=True)
    text = contract.render(st, contract.load_template(None))
    out = tmp_path / "out"
    (out / "contract.md").write_text("an older contract\n")
    result, error = finish.write(st, text, overwrite=False)  # not agreed: nothing is written, the wrapper neither
    assert not result.written and result.diff is not None and error is None
    assert sorted(p.name for p in out.iterdir()) == ["contract.md"]
    result, error = finish.write(st, text, overwrite=True)
    assert result.written and error is None and (out / "contract.md").read_text() == text
    assert "wamf_bench.py" in [p.name for p in out.iterdir()]


def test_no_wrapper_when_the_benchmark_needs_none(tmp_path):
    st = _state(tmp_path, wrapper=False)
    result, error = finish.write(st, contract.render(st, contract.load_template(None)), overwrite=False)
    assert result.written and error is None
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["contract.md"]
