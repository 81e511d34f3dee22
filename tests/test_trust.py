"""Issue #34, trust: a hostile repository, a second instance or a strange file cannot take over, hang,
or lose anything. Each attack is made with real files, a real git repository, real processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import git, make_repo
from terminal import WAMF, tmux, wait_for

from wamf_tui.bench.traces import touched_snapshot
from wamf_tui.detect.repo import detect_repo
from wamf_tui.detect.scripts import tracked_files

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
    from wamf_tui.infra.visible import strip_hidden
    from wamf_tui.model import Step
    from wamf_tui.ui.app import WamfApp
    from wamf_tui.ui.messages import TrialRequested

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

    proc = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom wamf_tui.session import lock\n"
                             "lock.take(sys.argv[1]); print('taken', flush=True); time.sleep(120)", str(root)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "taken"
    return proc


async def test_an_instance_taken_over_stops_saving_and_says_so(tmp_path):
    from helpers import until

    from wamf_tui.session import lock
    from wamf_tui.session import store as session
    from wamf_tui.ui.start import make_app

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
            # no key pressed: the app checks its lock every few seconds and says so
            await until(pilot, lambda: app.read_only is not None, "the loss noticed", timeout=30)
            await pilot.press("escape")  # back to the first question: an answer of this one's...
            await pilot.press("1")
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
    from wamf_tui import answers
    from wamf_tui.cli import main
    from wamf_tui.session import lock
    from wamf_tui.session import store as session
    from wamf_tui.ui.start import prefilled_app

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


# --- 3. bounded reads, linear patterns, a time budget -------------------------------------------------


def _bounded_python(code: str, timeout: float, memory_mb: int = 2048) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter with a memory cap and a time limit: an endless read or a
    catastrophic pattern fails here instead of taking the machine."""
    import resource
    import sys

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    try:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              preexec_fn=cap, cwd=Path(__file__).resolve().parent.parent)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running after {timeout} s") from None


def test_a_state_file_or_lock_that_never_ends_is_refused_with_a_line(tmp_path, state_home):
    """The saved session and the lock as links to /dev/zero, then as FIFOs: each read is refused at
    once with a clear line (no 7 GB read, no wait for a writer)."""
    from wamf_tui.session import lock
    from wamf_tui.session import store as session

    root = make_repo(tmp_path / "job")
    state, lock_path = session.state_file(root), lock.lock_file(root)
    state.parent.mkdir(parents=True)
    for make in (lambda p: p.symlink_to("/dev/zero"), os.mkfifo):
        for p in (state, lock_path):
            p.unlink(missing_ok=True)
            make(p)
        out = _bounded_python(
            "import json, sys\nfrom wamf_tui.session import lock, store as session\n"
            f"s, said = session.load_saved({str(root)!r})\n"
            f"print(json.dumps([s is None, said, lock.holder({str(root)!r}) is None, "
            f"lock.still_mine({str(root)!r})]))", timeout=60, memory_mb=1024)
        assert out.returncode == 0, out.stderr
        no_state, said, no_holder, mine = json.loads(out.stdout)
        assert no_state and no_holder and not mine
        assert said.startswith("the saved session") and "not a regular file" in said


def test_a_lock_file_of_blank_lines_is_read_in_linear_time(tmp_path):
    """pixi.lock and uv.lock with two million blank lines, a line of ten million spaces and a conda URL
    built to backtrack: read in seconds (a pattern over the whole text took over 81 s for far less)."""
    (tmp_path / "pixi.lock").write_text("\n" * 2_000_000 + " " * 10_000_000 + "\n"
                                        + ("- conda: " + "a/" * 500 + "x" + "-1" * 400 + "\n") * 2000
                                        + "- name: torch\n  version: 2.5.1\n")
    (tmp_path / "uv.lock").write_text("[[package]]\n" + "\n" * 2_000_000 + '[[package]]\nname = "torch"\n'
                                      'version = "2.5.1"\n')
    out = _bounded_python(
        "from pathlib import Path\nfrom wamf_tui.detect.environment import _locked\n"
        f"print(_locked(Path({str(tmp_path / 'pixi.lock')!r})), _locked(Path({str(tmp_path / 'uv.lock')!r})))",
        timeout=30)
    assert out.stdout.split() == ["[('torch',", "'2.5.1')]", "[('torch',", "'2.5.1')]"], out.stderr


LAUGHS = ('a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
          + "".join(f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(8))
          + "deepspeed: ds.json\ntrain: *i\n")


def test_a_billion_laughs_config_is_refused_not_walked(tmp_path):
    """A YAML file the command names, whose aliases expand to 387 million values: the reader refuses
    it in moments (the DeepSpeed pointer walk over it never ended); a Hydra config too."""
    root = make_repo(tmp_path / "job", {"train.py": "import torch\nimport deepspeed\n"
                                                    "for step in range(10):\n    loss = model(x)\n"
                                                    "    loss.backward()\n    opt.step()\n",
                                        "laughs.yaml": LAUGHS, "conf/config.yaml": LAUGHS})
    out = _bounded_python(
        "from wamf_tui.read.analyze import analyze_script\nfrom wamf_tui.read.hydra_config import compose\n"
        "from pathlib import Path\n"
        f"a = analyze_script(Path({str(root / 'train.py')!r}), Path({str(root)!r}), ['--config', 'laughs.yaml'])\n"
        f"t = compose(Path({str(root / 'conf')!r}), 'config', None, 'conf/config.yaml')\n"
        "print(a.files, t.note)", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "train.py" in out.stdout and "aliases expand past" in out.stdout


def test_a_script_of_ten_thousand_constants_is_read_in_linear_time(tmp_path):
    """10,000 module-level constants: one pass for all of them (a search per constant over the whole
    text, and a list searched per assignment, made 100,000 lines take minutes)."""
    lines = ["import torch"] + [f"x{i} = {i}" for i in range(10_000)] + [
        "for step in range(10):", "    loss = model(x).sum()", "    loss.backward()", "    opt.step()"]
    root = make_repo(tmp_path / "job", {"train.py": "\n".join(lines) + "\n"})
    out = _bounded_python(f"from wamf_tui.read.analyze import analyze_script\n"
                          f"a = analyze_script({str(root / 'train.py')!r}, {str(root)!r})\n"
                          "print(sorted(x.role for x in a.anchors))", timeout=40)
    assert "'backward'" in out.stdout, out.stderr


def test_the_reading_stops_at_its_budget_and_names_what_it_skipped(tmp_path, monkeypatch):
    from wamf_tui.read import analyze
    from wamf_tui.read.analyze import analyze_script

    root = make_repo(tmp_path / "job", {
        "train.py": "import torch\nimport helpers\nimport models\nfor step in range(10):\n"
                    "    loss = model(x)\n    loss.backward()\n    opt.step()\n",
        "helpers.py": "def f():\n    pass\n", "models.py": "class M:\n    pass\n"})
    monkeypatch.setattr(analyze, "READ_BUDGET_S", 0.0)
    analysis = analyze_script(root / "train.py", root)
    assert analysis.files == ["train.py"]  # the entry is always read
    assert any(n.startswith("reading stopped after 0 s; not read: helpers.py, models.py") for n in analysis.notes)


# --- 5. a value from a file lands in a shell line quoted --------------------------------------------


def test_an_environment_name_that_is_a_command_is_quoted_never_run(tmp_path):
    """environment.yml names its environment `x; touch MARKER` (and `$(...)`): the activate line holds
    it quoted, and running that line in a real shell hands conda the name and runs nothing."""
    from wamf_tui.detect.environment import locate

    marker = tmp_path / "ran"
    for n, name in enumerate((f"x; touch {marker}", f"$(touch {marker})", f"`touch {marker}`")):
        root = tmp_path / f"job{n}"
        root.mkdir()
        (root / "environment.yml").write_text(f"name: {name}\ndependencies:\n  - python=3.11\n")
        facts = locate(root, {"PATH": os.environ["PATH"]})
        assert facts.kind == "conda-file"
        out = subprocess.run(["bash", "-c", 'conda() { printf "%s\\n" "$@"; }\n' + facts.activate],
                             capture_output=True, text=True, timeout=30)
        assert out.stdout.splitlines() == ["activate", name]
        assert not marker.exists()
    # the system Python's folder, from PATH, as a shell line: quoted too
    odd = tmp_path / "bin; touch ran"  # run from tmp_path: it would leave the marker
    odd.mkdir()
    (odd / "python3").write_text("#!/bin/sh\n")
    (odd / "python3").chmod(0o755)
    (tmp_path / "job0" / "environment.yml").unlink()
    facts = locate(tmp_path / "job0", {"PATH": str(odd)})
    assert facts.kind == "system"
    out = subprocess.run(["bash", "-c", facts.activate + '\nprintf "%s" "$PATH"'], capture_output=True, text=True,
                         timeout=30, env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path)
    assert out.stdout.startswith(f"{odd}:") and not marker.exists()


# --- 6. started from a repository folder, nothing of it is imported -------------------------------------


def test_python_m_in_a_repository_imports_none_of_its_modules(tmp_path):
    """`python -m wamf_tui` started inside a repo whose `argparse.py` and `json.py` leave a marker:
    the app's own imports get the real modules (with and without `-P`)."""
    import sys

    marker = tmp_path / "ran"
    root = make_repo(tmp_path / "job")
    for name in ("argparse", "json", "textwrap", "gettext"):
        (root / f"{name}.py").write_text(f"open({str(marker)!r}, 'a').write('{name}\\n')\nraise SystemExit(7)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH")}
    for flags in ([], ["-P"]) if sys.version_info >= (3, 11) else ([],):
        for args in (["--version"], ["check", "missing.md"], ["detect", "."]):
            out = subprocess.run([sys.executable, *flags, "-m", "wamf_tui", *args], cwd=root, env=env,
                                 capture_output=True, text=True, timeout=120)
            assert out.returncode in (0, 2), (args, out.stderr)
            assert not marker.exists(), (flags, args, marker.read_text())


# --- 7. bad files and folders: one line, exit 2, no traceback ---------------------------------------------


def test_bad_files_and_folders_are_one_line_and_exit_2(tmp_path, state_home):
    """A state folder that is a file, a FIFO named as the contract or the answers file, `--timeout nan`
    and `inf`: each is one line on stderr, exit 2, no traceback, and nothing waits on the FIFO."""
    root = make_repo(tmp_path / "job")
    fifo = tmp_path / "fifo.md"
    os.mkfifo(fifo)
    answers = tmp_path / "a.json"
    answers.write_text("{}")
    contract = tmp_path / "c.md"
    contract.write_text("run python train.py\n")
    not_a_folder = tmp_path / "state-file"
    not_a_folder.write_text("")
    cases = {
        "FIFO as the contract": ([str(root), "--answers", str(answers), "--yes", "--contract", str(fifo)], {},
                                 "not a regular file"),
        "FIFO as the answers": ([str(root), "--answers", str(fifo), "--yes"], {}, "not a regular file"),
        "FIFO to check": (["check", str(fifo)], {}, "not a regular file"),
        "timeout nan": (["try", str(root), "--contract", str(contract), "--timeout", "nan"], {},
                        "'nan' is not a positive number of seconds"),
        "timeout inf": (["try", str(root), "--contract", str(contract), "--timeout", "inf"], {},
                        "'inf' is not a positive number of seconds"),
    }
    for name, (args, env, said) in cases.items():
        out = subprocess.run([WAMF, *args], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "XDG_STATE_HOME": str(state_home), **env})
        errors = [line for line in out.stderr.splitlines()  # argparse's usage, however many lines it wraps to
                  if not line.startswith(("usage:", " ", "wamf-tui: warning"))]
        assert (out.returncode, len(errors)) == (2, 1), (name, out.stderr)
        assert said in errors[0] and "Traceback" not in out.stderr, (name, out.stderr)
    # the app itself, in a terminal (`script` gives it one), with a state folder that is a file
    out = subprocess.run(["script", "-qec", f"{WAMF} {root}", "/dev/null"], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "XDG_STATE_HOME": str(not_a_folder), "TERM": "xterm"})
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert out.returncode == 2 and len(lines) == 1 and "cannot save sessions in" in lines[0], out.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_an_unreadable_repository_is_one_line(tmp_path):
    root = make_repo(tmp_path / "job")
    root.chmod(0)
    try:
        out = subprocess.run([WAMF, str(root)], capture_output=True, text=True, timeout=60,
                             env={**os.environ, "TERM": "xterm"})
    finally:
        root.chmod(0o755)
    assert out.returncode == 2 and "permission denied" in out.stderr and "Traceback" not in out.stderr


def test_bom_and_latin1_sources_are_read_as_python_reads_them(tmp_path):
    """A script with a UTF-8 BOM, one with a Latin-1 coding line and Latin-1 bytes: parsed whole (a BOM
    made the reader fall back to a text scan), every line number right."""
    from wamf_tui.read.analyze import analyze_script

    body = "import torch\nfor step in range(3):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
    root = make_repo(tmp_path / "job", {})
    (root / "bom.py").write_bytes(b"\xef\xbb\xbf" + body.encode())
    (root / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + body.encode())
    for name, backward in (("bom.py", 4), ("latin.py", 6)):
        analysis = analyze_script(root / name, root)
        assert not analysis.partial, (name, analysis.notes)
        assert [a.line for a in analysis.anchors if a.role == "backward"] == [backward]
        assert not any("not UTF-8" in n or "parse" in n for n in analysis.notes), analysis.notes


# --- 8. the user's own wamf_bench.py ------------------------------------------------------------------


def test_a_users_wamf_bench_is_never_replaced_nor_run_as_the_wrapper(tmp_path):
    """The user's own `wamf_bench.py` beside the contract: as a FIFO it is skipped at once (reading it
    to compare waited forever); made after the run line named the wrapper there, the run line is refused
    before the contract is written (it would run the user's file), and writing the wrapper leaves it."""
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import wrapper_path
    from wamf_tui.propose.validate import check_run
    from wamf_tui.propose.wrapper import WRAPPER, write_wrapper

    root = make_repo(tmp_path / "job", {"train.py": "import torch\nloss.backward()\n"})
    state = InitState(repo_path=str(root), contract_path=str(root / "contract.md"))
    os.mkfifo(root / "wamf_bench.py")
    out = _bounded_python("from wamf_tui.propose.run_line import wrapper_path\nfrom wamf_tui.model import InitState\n"
                          f"print(wrapper_path(InitState(contract_path={str(root / 'contract.md')!r})))", timeout=30)
    assert out.stdout.strip() == str(root / "wamf_bench-2.py"), out.stderr
    (root / "wamf_bench.py").unlink()

    named = wrapper_path(state)  # what the proposed run line names, before the user's file exists
    assert named == str(root / "wamf_bench.py")
    run = f"python {named} train.py"
    assert check_run(run, root, writing=wrapper_path(state)).problems == []
    own = b"print('the user's own benchmark')\n"
    (root / "wamf_bench.py").write_bytes(own)  # the user's, made before step 4's write
    verdict = check_run(run, root, writing=wrapper_path(state))
    assert any("a file of yours, not the benchmark wrapper" in p for p in verdict.problems), verdict.problems
    assert write_wrapper(root / "wamf_bench.py") is not None
    assert (root / "wamf_bench.py").read_bytes() == own
    second = Path(wrapper_path(state))
    assert second == root / "wamf_bench-2.py" and write_wrapper(second) is None and second.read_text() == WRAPPER
    assert check_run(f"python {second} train.py", root, writing=str(second)).problems == []


def test_detection_over_files_of_blank_lines_and_tabs_ends(tmp_path):
    """Every file detection reads (README, Makefile, shell and Slurm scripts, setup.py, pyproject.toml,
    the lock files, a script) as a megabyte of blank lines, of tabs, of space-newline pairs: detection
    ends in seconds (`^\\s*` and a docstring pattern over blank lines backtracked without end)."""
    names = ["README.md", "Makefile", "run.sh", "train.py", "environment.yml", "pyproject.toml", "setup.py",
             "setup.cfg", "pixi.lock", "uv.lock", "poetry.lock", "launch.slurm", "config.yaml", "docs/usage.md"]
    for kind, text in {"blank": "\n" * 1_000_000, "tabs": ("\t" * 1000 + "\n") * 1000,
                       "mixed": " \n" * 500_000}.items():
        root = tmp_path / kind
        (root / "docs").mkdir(parents=True)
        for name in names:
            (root / name).write_text(("import torch\n" if name == "train.py" else "") + text)
        git(root, "init", "-q")
        git(root, "add", "-A")
        out = _bounded_python(f"from wamf_tui.detect.run import detect_all\nd = detect_all({str(root)!r})\n"
                              "print(d.scripts.candidates[0].path if d.scripts and d.scripts.candidates else '')",
                              timeout=60)
        assert out.returncode == 0 and out.stdout.strip() == "train.py", (kind, out.stderr[-500:])
