"""Issue #34, trust: a hostile repository, a second instance or a strange file cannot take over, hang,
or lose anything. Each attack is made with real files, a real git repository, real processes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import git, make_repo
from terminal import WAMF, tmux, wait_for

from wamf_tui.detect.repo import detect_repo
from wamf_tui.detect.scripts import tracked_files
from wamf_tui.trial import touched_snapshot

# --- 4. git runs nothing the repository's configuration names ----------------------------------------


def _program(path: Path, marker: Path, what: str) -> Path:
    """A program that leaves `what` in the marker file when it runs (and passes its input through)."""
    path.write_text(f"#!/bin/sh\necho {what} >> {marker}\ncat\n")
    path.chmod(0o755)
    return path


def planted_repo(tmp_path: Path, marker: Path) -> Path:
    """A committed repo whose .git/config runs a program in every way git allows on reading: the
    fsmonitor hook, a clean/smudge filter every file uses (required), a post-index-change hook in
    both hook places, a pager, and gpg for a signed HEAD that `log.showSignature` would verify."""
    root = make_repo(tmp_path / "job", {"train.py": "import torch\n", "data.txt": "x\n"})
    # a signed commit on top: git log with showSignature starts gpg.program to check it
    tree = git(root, "rev-parse", "HEAD^{tree}").strip()
    parent = git(root, "rev-parse", "HEAD").strip()
    body = (f"tree {tree}\nparent {parent}\nauthor t <t@localhost> 1700000000 +0000\n"
            "committer t <t@localhost> 1700000000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n"
            " iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n")
    sha = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=root, input=body,
                         capture_output=True, text=True, check=True).stdout.strip()
    git(root, "update-ref", "refs/heads/main", sha)
    bin_ = tmp_path / "bin"
    hooks = tmp_path / "hooks"
    for folder in (bin_, hooks):
        folder.mkdir()
    for folder in (hooks, root / ".git" / "hooks"):
        for hook in ("post-index-change", "post-checkout", "reference-transaction"):
            _program(folder / hook, marker, f"hook-{hook}")
    p = {what: _program(bin_ / what, marker, what) for what in ("fsmonitor", "clean", "smudge", "gpg", "pager")}
    (root / ".gitattributes").write_text("* filter=evil\n")
    with (root / ".git" / "config").open("a") as f:
        f.write(f'[core]\n\tfsmonitor = {p["fsmonitor"]}\n\thooksPath = {hooks}\n\tpager = {p["pager"]}\n'
                f'[filter "evil"]\n\tclean = {p["clean"]}\n\tsmudge = {p["smudge"]}\n\trequired = true\n'
                f'[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {p["gpg"]}\n')
    # stat no longer matches the index: status hashes the file again, through the clean filter
    os.utime(root / "data.txt", (1_800_000_000, 1_800_000_000))
    os.utime(root / "train.py", (1_800_000_000, 1_800_000_000))
    return root


def test_git_runs_nothing_the_repositorys_configuration_names(tmp_path):
    marker = tmp_path / "ran"
    root = planted_repo(tmp_path, marker)
    # the attack is real: plain git with this config runs the planted programs
    subprocess.run(["git", "status"], cwd=root, capture_output=True, env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    subprocess.run(["git", "log", "-1"], cwd=root, capture_output=True)
    assert marker.exists() and {"fsmonitor", "clean", "gpg"} <= set(marker.read_text().split())
    marker.unlink()

    facts = detect_repo(root)
    files = tracked_files(root)
    snapshot = touched_snapshot(root)

    assert not marker.exists(), marker.read_text()
    assert facts.error is None and facts.subject == "signed"
    assert set(facts.untracked) == {".gitattributes"} and facts.modified == []
    assert {"train.py", "data.txt", ".gitattributes"} <= set(files)
    assert snapshot is not None and set(snapshot) == {".gitattributes"}


# --- 1. no text from the repo or a file reaches the terminal raw ---------------------------------------

CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"  # OSC 52: writes the clipboard (through tmux too)
HOSTILE = f"{CLIPBOARD}\x1b[2J\x9b2J\x9d2;pwned\x9c"  # and CSI clear screen, C1 CSI, C1 OSC retitle
RAW = [b"\x1b]52", b"\x1b[2J", "\x9b".encode(), "\x9d".encode()]  # what must never be sent


def _sent_raw(data: bytes) -> list[bytes]:
    return [r for r in RAW if r in data]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_a_committed_contract_with_escapes_is_shown_escaped_in_the_diff(tmp_path, state_home, tmux_server):
    """Step 4's difference with a committed contract.md, in a real terminal: the bytes the app sends
    (tmux's pipe-pane) hold the escapes as text, never the sequences; the clipboard is untouched."""
    from wamf_tui import demo_repo

    repo = demo_repo.make_demo(str(tmp_path))
    (repo / "contract.md").write_text(f"# old contract {HOSTILE}\n")
    git(repo, "add", "contract.md")
    git(repo, "commit", "-q", "-m", "a contract")
    answers = tmp_path / "a.json"
    answers.write_text("{}")
    raw = tmp_path / "pane.bytes"
    raw.touch()
    name = f"wamf-diff-{os.getpid()}"
    before = tmux("list-buffers")
    tmux("set-option", "-s", "set-clipboard", "on")
    tmux("new-session", "-d", "-s", name, "-x", "160", "-y", "50",
         f"sleep 1; env XDG_STATE_HOME={state_home} TERM=xterm-256color {WAMF} {repo} --answers {answers}; sleep 600")
    try:
        tmux("pipe-pane", "-t", name, f"cat >> {raw}")
        wait_for(name, "Does it describe the job")
        tmux("send-keys", "-t", name, "y")
        wait_for(name, "old contract")
        end = time.monotonic() + 10
        while time.monotonic() < end and b"ZXZpbA==" not in raw.read_bytes():
            time.sleep(0.05)
        sent = raw.read_bytes()
        assert b"\\x1b]52;c;ZXZpbA==" in sent and b"\\x9b2J" in sent  # shown, as visible escapes
        assert _sent_raw(sent) == []
        assert tmux("list-buffers") == before
        assert "pwned" not in tmux("display-message", "-p", "-t", name, "#{pane_title}")
    finally:
        tmux("kill-session", "-t", name)


def _hostile_cli_cases(tmp_path: Path) -> dict[str, list[str]]:
    root = make_repo(tmp_path / "job", {
        "train.py": "import argparse\nimport torch\np = argparse.ArgumentParser()\n"
                    f"p.add_argument('--save_every{HOSTILE}', default=5)\n"
                    "for step in range(10):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"})
    git(root, "commit", "-q", "--allow-empty", "-m", f"{HOSTILE}subject")
    contract = tmp_path / f"contract{HOSTILE}.md"  # a strange file name: it is in every problem line
    contract.write_text("# not a contract\n")
    tried = tmp_path / "tried.md"
    tried.write_text("run printf '" + HOSTILE.replace("\x1b", "\\033").replace("\x07", "\\007")
                     + "\\n'\n")
    answers = tmp_path / "answers.json"
    answers.write_text('{"' + HOSTILE.replace("\x1b", "\\u001b").replace("\x07", "\\u0007") + '": "x"}')
    return {
        "check": ["check", str(contract)],
        "detect": ["detect", str(root)],
        "analyze": ["analyze", "--json", str(root / "train.py")],
        "try": ["try", str(root), "--contract", str(tried), "--timeout", "60"],
        "answers": [str(root), "--answers", str(answers), "--yes"],
        "argparse": [str(root), f"--{HOSTILE}"],
        "missing path": [str(tmp_path / HOSTILE)],
    }


def test_no_command_prints_an_escape_from_the_repo(tmp_path):
    """Every subcommand and the app's command line, each given a string with OSC 52, CSI and C1
    controls: what it prints (stdout and stderr, as bytes) holds them only as visible escapes."""
    cases = _hostile_cli_cases(tmp_path)
    seen = {}
    for name, args in cases.items():
        out = subprocess.run([WAMF, *args], capture_output=True, timeout=120,
                             env={**os.environ, "TERM": "dumb"})
        seen[name] = _sent_raw(out.stdout + out.stderr)
        said = out.stdout + out.stderr
        assert b"\\x1b" in said or b"\\u001b" in said, (name, said)  # it was said, escaped
    assert seen == {name: [] for name in cases}


def _screen_lines(app) -> list[str]:
    return ["".join(s.text for s in strip) for strip in app.screen._compositor.render_strips()]


async def test_no_screen_draws_an_escape_whatever_path_the_text_took(tmp_path):
    """Every step's screen, a notification and the trial's header, each holding answers with OSC 52,
    CSI and C1 controls that passed no gate on the way in (as a path nobody thought of would): no
    line the app draws holds a control character."""
    from helpers import full_state, until

    from wamf_tui import flow
    from wamf_tui.model import Step
    from wamf_tui.ui.app import WamfApp
    from wamf_tui.ui.messages import TrialRequested
    from wamf_tui.visible import strip_hidden

    root = make_repo(tmp_path / "job")
    state = full_state().model_copy(update={
        "repo_path": str(root), "contract_path": str(root / "contract.md"), "reader": HOSTILE,
        "activate": f"source {HOSTILE}", "run": f"python train.py {HOSTILE}", "hints": [HOSTILE],
        "anything_else": HOSTILE, "when_to_stop": HOSTILE})
    app = WamfApp(state, detect=False)
    drawn: list[str] = []
    async with app.run_test(size=(140, 50)) as pilot:
        for step in Step:
            app.state = flow.go(app.state, step)
            app.show_step()
            await until(pilot, lambda s=step: getattr(app.screen, "STEP", None) == s, f"step {step}")
            await pilot.pause()
            drawn += _screen_lines(app)
        app.notify(f"a message naming {HOSTILE}")
        await pilot.pause()
        drawn += _screen_lines(app)
        app.post_message(TrialRequested(f"python train.py {HOSTILE}"))
        await until(pilot, lambda: "TrialScreen" in type(app.screen).__name__, "the trial's header")
        await pilot.pause()
        drawn += _screen_lines(app)
        await pilot.press("escape")
    assert any("ZXZpbA==" in line for line in drawn)  # the answers were drawn
    assert [line for line in drawn if strip_hidden(line) != line] == []


# --- 2. one owner of a session at a time ---------------------------------------------------------------


def _second_instance(root: Path) -> subprocess.Popen:
    """A real second process that takes the repo's session over, as the palette's "Take over" does,
    and stays alive holding it."""
    import sys

    proc = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom wamf_tui import lock\n"
                             "lock.take(sys.argv[1]); print('taken', flush=True); time.sleep(120)", str(root)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "taken"
    return proc


async def test_an_instance_taken_over_stops_saving_and_says_so(tmp_path):
    from helpers import until

    from wamf_tui import lock, session
    from wamf_tui.ui.app import make_app

    root = make_repo(tmp_path / "job")
    app = make_app(root, detect=False)
    assert app.read_only is None
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("2")  # an answer, saved: this instance holds the session
        await until(pilot, lambda: app.saver.flush(0) and session.load(root) is not None, "the first save")
        other = _second_instance(root)
        try:
            theirs = session.load(root).model_copy(update={"reader": "the other instance's answer"})
            session.state_file(root).write_text(theirs.to_json())  # what it saved since
            await pilot.press("escape")  # back to the first question: an answer of this one's...
            await pilot.press("1")
            await until(pilot, lambda: app.read_only is not None, "the loss noticed")
            assert app.read_only.pid == other.pid
            assert any("took this repo's session over" in n.message for n in app._notifications)
            await pilot.press("3")
            app.save(wait=True)
            assert session.load(root).reader == "the other instance's answer"  # never overwritten
        finally:
            other.kill()
            other.wait()
    lock.release(root)
    assert lock.lock_file(root).exists()  # it was never this one's to release


def test_the_answers_file_honours_the_lock(tmp_path):
    """`--answers` opens read-only while another instance holds the session; `--answers --yes`
    refuses to write (exit 2)."""
    from wamf_tui import answers, lock, session
    from wamf_tui.cli import main
    from wamf_tui.ui.app import prefilled_app

    root = make_repo(tmp_path / "job")
    other = _second_instance(root)
    try:
        app = prefilled_app(session.new_state(root))
        assert app.read_only is not None and app.read_only.pid == other.pid
        assert not app.holds_session
        file = tmp_path / "a.json"
        file.write_text("{}")
        assert answers.load(file) == {}
        assert main([str(root), "--answers", str(file), "--yes"]) == 2
        assert not (root / "contract.md").exists()
    finally:
        other.kill()
        other.wait()
    assert lock.holder(root) is None
