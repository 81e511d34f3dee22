"""The bad-input matrix and the safety promises: each case ends in a clear message and a usable app."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, make_repo
from helpers import enter_until_done, settle, until

from wamf_tui.contract import git_exclude
from wamf_tui.contract import render as contract
from wamf_tui.detect.scripts import tracked_files
from wamf_tui.model import Step
from wamf_tui.session import store as session
from wamf_tui.ui import app as ui_app
from wamf_tui.ui.app import WamfApp
from wamf_tui.ui.screens import ConfirmScreen


def app_on(path: Path, **kw) -> WamfApp:
    from wamf_tui.detect.repo import detect_repo

    repo = detect_repo(path)
    state = session.new_state(Path(repo.root or repo.path), kw.pop("contract", None))
    state = state.model_copy(update={"detected": state.detected.model_copy(update={"repo": repo})})
    return WamfApp(state, **kw)


def message(app: WamfApp) -> str:
    return str(app.screen.query_one("#message").render())


async def walk(app: WamfApp, size=(120, 40)) -> str:
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        await enter_until_done(pilot, app)
    return Path(app.state.contract_path).read_text()


async def test_not_a_git_repo(tmp_path):
    (tmp_path / "train.py").write_text("import torch\nloss.backward()\n")
    app = app_on(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press("enter")
        q = app.screen.qview.question
        assert q.key == "not_git" and "is not a git repository" in q.prompt
        await pilot.press("enter")  # continue with this folder
        assert app.screen.qview.question.key == "repo"


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_repo_without_commits_and_detached_head(tmp_path):
    empty = make_repo(tmp_path / "empty", {"train.py": "import torch\n"}, commit=False)
    app = app_on(empty)
    text = await walk(app)
    assert "no commits yet" in text
    detached = make_repo(tmp_path / "detached")
    git(detached, "checkout", "-q", "--detach")
    assert "(detached HEAD @ " in await walk(app_on(detached))


def test_bare_repo_is_a_one_line_message(tmp_path):
    src = make_repo(tmp_path / "src")
    subprocess.run(["git", "clone", "-q", "--bare", str(src), str(tmp_path / "bare.git")], check=True)
    out = subprocess.run([sys.executable, "-m", "wamf_tui", str(tmp_path / "bare.git")], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr == f"wamf-tui: {tmp_path / 'bare.git'} is a bare repository (no checkout); " \
                         "run wamf-tui in a checkout of it\n"


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_path_with_spaces_and_non_ascii(tmp_path):
    root = make_repo(tmp_path / "my jöb dir")
    text = await walk(app_on(root))
    assert f"repo            {root.resolve()} (main @ " in text


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory (CI runs as root)")
def test_unreadable_directory(tmp_path):
    root = tmp_path / "r"
    (root / "locked").mkdir(parents=True)
    (root / "train.py").write_text("import torch\n")
    (root / "locked").chmod(0)
    try:
        assert "train.py" in tracked_files(root)
    finally:
        (root / "locked").chmod(0o755)


def test_symlink_loop_does_not_hang(tmp_path):
    root = tmp_path / "loop"
    (root / "a").mkdir(parents=True)
    (root / "a" / "back").symlink_to(root, target_is_directory=True)
    (root / "train.py").write_text("import torch\n")
    files = tracked_files(root)  # no git: the bounded walk, which does not follow links
    assert "train.py" in files


# Not UTF-8, empty and 5 MB scripts are covered at the analyzer level (test_analyze.py).
@pytest.mark.slow  # walks the whole flow to a written contract
@pytest.mark.parametrize("body", [b"import torch\nloss.backward(\n", b"\x00\x01ELF"], ids=["syntax", "binary"])
async def test_odd_scripts_still_end_in_a_contract(tmp_path, body):
    root = make_repo(tmp_path / "r", {"train.py": "import torch\n"})
    (root / "train.py").write_bytes(body)
    git(root, "commit", "-qam", "odd")
    app = app_on(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        for _ in range(40):
            if isinstance(app.screen, ConfirmScreen) and app.state.at == "done":
                break
            q = app.screen.qview.question
            if q.key == "command" and not q.default:  # nothing looked like a job script: the user names it
                app.screen.query_one("#answer").value = "train.py"
            await pilot.press("enter")
            await settle(pilot, app)
    text = Path(app.state.contract_path).read_text()
    assert contract.check(text) == []
    if body:
        assert app.state.analysis is not None and app.state.analysis.notes


async def test_nvml_failing_mid_session(tmp_path, monkeypatch):
    from fake_nvml import FakeNvml, gpu, in_children

    in_children(tmp_path, monkeypatch, "[gpu()]")  # the detection child finds the GPU
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml([gpu()], fail_after=0))  # then the refresh fails
    monkeypatch.setattr(ui_app, "GPU_REFRESH_S", 0.1)
    app = app_on(make_repo(tmp_path / "r"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await until(pilot, lambda: "NVML stopped answering" in (app.state.detected.hardware.nvml_error or ""),
                    "the NVML failure never showed")
        await pilot.press("enter")
        assert app.state.step == Step.JOB  # still answering


async def test_a_timer_or_a_message_after_the_last_screen_went_does_nothing(tmp_path):
    """Quitting empties the screen stack while the GPU refresh timer and the workers' messages can still
    come (a race CI met once): each is a no-op then, never a ScreenStackError."""
    from wamf_tui.model import HardwareFacts
    from wamf_tui.ui.messages import GpusRefreshed

    app = app_on(make_repo(tmp_path / "r"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
    assert not app.screen_stack
    app._refresh_gpu()
    app._facts_changed("told")
    app.on_gpus_refreshed(GpusRefreshed(HardwareFacts(host="h", nvml=True)))
    app.show_step()
    app._trial_done(None)


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_long_and_control_character_answers(tmp_path):
    app = app_on(make_repo(tmp_path / "r"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        app.screen.query_one("#answer").value = "x" * 10_000
        await pilot.press("enter")
        assert app.state.reader == "x" * 10_000
        app.screen.query_one("#answer").value = "repo \x1b[31mred\x07 [link=x]y[/link]"
        await pilot.press("enter")
        assert app.state.repo == "repo \\x1b[31mred\\x07 [link=x]y[/link]"
        await enter_until_done(pilot, app)
    text = Path(app.state.contract_path).read_text()
    assert contract.check(text) == [] and "[link=x]y[/link]" in text and "\x1b" not in text


async def test_resize_to_40x12_and_back_mid_question(tmp_path):
    app = app_on(make_repo(tmp_path / "r"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await pilot.press(*"half typed")
        await pilot.resize_terminal(40, 12)
        await pilot.pause()
        assert app.screen.has_class("-tiny")
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert not app.screen.has_class("-tiny")
        await pilot.press("enter")
        assert app.state.reader == "half typed"


MARKER_CODE = "import pathlib; pathlib.Path({marker!r}).write_text('executed')\n"


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_user_code_never_runs_and_the_repo_only_gains_accepted_files(tmp_path, monkeypatch):
    """Also from inside the repo, as users start it: the app's children (detection, the script
    reader) must not pick up the repo's own `json.py` or `decimal.py` in place of the real ones."""
    marker = tmp_path / "MARKER"
    code = MARKER_CODE.format(marker=str(marker))
    root = make_repo(tmp_path / "r", {
        "train.py": code + "import torch\nfrom helpers import util\nimport argparse\n"
                    "p = argparse.ArgumentParser()\np.add_argument('--max-steps', type=int, default=9)\n"
                    "loss = model(x)\nloss.backward()\noptimizer.step()\n",
        "helpers/__init__.py": code, "helpers/util.py": code, "setup.py": code, "conftest.py": code,
        "tests/test_it.py": code, "noxfile.py": code, "json.py": code, "decimal.py": code,
    })
    monkeypatch.chdir(root)
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir()
    (root / "ignored" / "x.txt").write_text("")
    before = set(git(root, "status", "--porcelain", "--ignored").splitlines())
    exclude = (root / ".git" / "info" / "exclude").read_bytes()
    app = app_on(root)
    text = await walk(app)
    assert not marker.exists()
    after = set(git(root, "status", "--porcelain", "--ignored").splitlines())
    assert after - before == {"?? contract.md", "?? wamf_bench.py"}  # the wrapper: accepted in the table
    assert (root / ".git" / "info" / "exclude").read_bytes() == exclude  # not asked, not touched
    assert "train.py" in text


@pytest.mark.slow  # walks the whole flow to a written contract
async def test_exclude_is_touched_only_when_the_user_agrees(tmp_path):
    root = make_repo(tmp_path / "r")
    app = app_on(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        await enter_until_done(pilot, app)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("2")  # list our files in .git/info/exclude
        await pilot.pause()
    assert "/contract.md" in (root / ".git" / "info" / "exclude").read_text()
    assert git(root, "status", "--porcelain") == ""


def test_hiding_our_files_works_in_a_linked_worktree(tmp_path):
    """In a `git worktree add` checkout `.git` is a file; git reads the exclude list of the repository
    they share, so that is where the app's files go."""
    main = make_repo(tmp_path / "main")
    tree = tmp_path / "tree"
    git(main, "worktree", "add", "-q", str(tree))
    (tree / "contract.md").write_text("# c\n")
    state = session.new_state(tree)
    assert git(tree, "status", "--porcelain") == "?? contract.md\n"
    assert git_exclude.add_to_exclude(state).startswith("listed in .git/info/exclude: /contract.md")
    assert git(tree, "status", "--porcelain") == ""
    assert "/contract.md" in (main / ".git" / "info" / "exclude").read_text()


def test_a_git_error_is_said_as_the_cause_never_as_none(tmp_path):
    from wamf_tui.detect.run import detect_all
    from wamf_tui.detect.summary import describe
    from wamf_tui.propose import proposals

    root = make_repo(tmp_path / "r")
    for obj in (root / ".git" / "objects").iterdir():  # the commit HEAD names is gone
        if len(obj.name) == 2:
            subprocess.run(["rm", "-rf", str(obj)], check=True)
    detected = detect_all(root)
    rows = dict(describe(detected))
    assert rows["repo"] == "main (commit unreadable)" and "None" not in str(describe(detected))
    state = session.new_state(root)
    state = state.model_copy(update={"detected": detected})
    line = proposals.repo_line(state)
    assert line.startswith(f"{root.resolve()} (main, commit unreadable: git failed: ") and "None" not in line
