"""A hostile repo: nothing of it runs, and none of its text reaches the terminal raw.

Each attack leaves a marker file when it works, or puts raw escape bytes on a real terminal.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import git, make_repo
from terminal import WAMF, tmux, wait_for, wait_for_gone

from wamf_tui.detect.environment import detect_environment
from wamf_tui.detect.run import detect_all
from wamf_tui.infra import children
from wamf_tui.infra.visible import visible
from wamf_tui.read.analyze import analyze_script

# OSC 52 sets the clipboard (through tmux too), OSC 2 the pane's title.
CLIPBOARD = "\x1b]52;c;ZXZpbA==\x07"
TITLE = "\x1b]2;pwned\x07"


def marker_code(marker: Path) -> str:
    return f"import os\nwith open({str(marker)!r}, 'a') as f: f.write(str(os.getpid()) + '\\n')\n"


def hostile_venv(venv: Path, marker: Path) -> None:
    """A venv whose every way of running code leaves the marker: its `bin/python` is a script of
    the repo's, a `.pth` file and a `sitecustomize.py` run in any interpreter that starts there."""
    site = venv / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\nversion = 3.12.1\n")
    python = venv / "bin" / "python"
    python.parent.mkdir()
    python.write_text(f"#!/bin/sh\necho ran >> {marker}\n"
                      'echo \'{"python": "6.6.6", "packages": {"torch": "6.6.6"}, "cuda": null}\'\n')
    python.chmod(0o755)
    (site / "evil.pth").write_text(f"import os; open({str(marker)!r}, 'a').write('pth\\n')\n")
    (site / "sitecustomize.py").write_text(marker_code(marker))
    (site / "torch-2.5.1+cu124.dist-info").mkdir()
    (site / "torch").mkdir()
    (site / "torch" / "version.py").write_text("cuda: Optional[str] = '12.4'\n")
    (site / "numpy-2.1.0.dist-info").mkdir()


def test_the_environment_is_read_from_its_files_and_its_interpreter_never_runs(tmp_path):
    marker = tmp_path / "ran"
    root = make_repo(tmp_path / "job")
    hostile_venv(root / ".venv", marker)
    env = os.environ.copy()
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV"):
        env.pop(var, None)
    out = subprocess.run([WAMF, "detect", str(root), "--json"], capture_output=True, text=True, env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert not marker.exists(), marker.read_text()
    assert not list((root / ".venv").rglob("__pycache__"))
    facts = detect_all(root).env
    assert (facts.kind, facts.python_version) == ("venv", "3.12.1")
    assert (facts.torch, facts.torch_cuda) == ("2.5.1+cu124", "12.4")
    assert {p.name for p in facts.packages} == {"torch", "numpy"}
    assert not marker.exists()


def test_a_missing_interpreter_is_said_as_such(tmp_path):
    venv = tmp_path / "v"
    (venv / "bin").mkdir(parents=True)
    assert "no interpreter" in detect_environment(tmp_path, environ={"VIRTUAL_ENV": str(venv)}).error
    (venv / "bin" / "python").symlink_to(tmp_path / "conda" / "envs" / "gone" / "bin" / "python3.11")
    env = detect_environment(tmp_path, environ={"VIRTUAL_ENV": str(venv)})
    assert env.error == f"interpreter {venv / 'bin' / 'python'} is missing" and env.torch is None


def test_a_real_interpreter_without_pyvenv_cfg_is_read_from_its_layout(tmp_path):
    """The system Python: the version from the interpreter's file name, the packages from its lib folder."""
    prefix = tmp_path / "usr"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "lib" / "python3.10" / "site-packages" / "transformers-4.46.0.dist-info").mkdir(parents=True)
    (prefix / "bin" / "python3.10").write_text(f"#!/bin/sh\necho ran >> {tmp_path / 'ran'}\n")
    (prefix / "bin" / "python3.10").chmod(0o755)
    (prefix / "bin" / "python3").symlink_to("python3.10")
    env = detect_environment(tmp_path, environ={"PATH": str(prefix / "bin")})
    assert (env.kind, env.python_version) == ("system", "3.10")
    assert [(p.name, p.version) for p in env.packages] == [("transformers", "4.46.0")]
    assert not (tmp_path / "ran").exists()


def test_the_apps_children_never_import_the_repos_modules(tmp_path):
    """With PYTHONPATH on the repo, its `sitecustomize.py`, `json.py` and `re.py` would be imported
    in place of the real ones by any Python started without -I."""
    marker = tmp_path / "ran"
    root = make_repo(tmp_path / "job", {"train.py": "import torch\nloss.backward()\n",
                                        "sitecustomize.py": marker_code(marker), "json.py": marker_code(marker),
                                        "re.py": marker_code(marker) + "raise SystemExit(3)\n"})
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = children.wamf_tui("detect", str(root), "--stream")
    out = subprocess.run(command["cmd"], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert '"subject": "scripts"' in out.stdout
    assert not marker.exists()
    # The command itself: after its first line it re-runs isolated, so the repo's re.py and json.py
    # (which the app imports) never run; only Python's own start-up saw the sitecustomize.
    out = subprocess.run([WAMF, "detect", str(root)], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "train.py" in out.stdout
    assert len(marker.read_text().splitlines()) <= 1


def hostile_repo(root: Path) -> Path:
    """Control characters in everything the repo writes: a commit subject, a file name and a shell
    script naming it, and a flag and its help in the job script."""
    script = f"train{TITLE}.py"
    make_repo(root, {
        script: "import argparse\nimport torch\n"
                f"p = argparse.ArgumentParser()\np.add_argument('--save_every{CLIPBOARD}', default=5, help='x')\n"
                "for step in range(10):\n    loss = model(x)\n    loss.backward()\n    opt.step()\n"
                f"    torch.save(model, 'out{TITLE}.pt')\n",
        "run.sh": f"torchrun --nproc_per_node=2 '{script}'\n",
    }, commit=False)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", f"{CLIPBOARD}fix")
    return root


def strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in strings(k) + strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def test_every_fact_from_the_repo_passes_the_gate(tmp_path):
    root = hostile_repo(tmp_path / "job")
    detected = detect_all(root)
    assert detected.repo.subject == visible(f"{CLIPBOARD}fix") == "\\x1b]52;c;ZXZpbA==\\x07fix"
    assert detected.scripts.candidates[0].path == visible(f"train{TITLE}.py")
    analysis = analyze_script(root / f"train{TITLE}.py", root)
    assert any("\\x1b" in s for s in strings(analysis.model_dump()))  # it was read, and shown escaped
    for value in strings(detected.model_dump()) + strings(analysis.model_dump()):
        assert value.isprintable(), repr(value)


@pytest.mark.parametrize("text", ["\x1b[31m", "\x9b2J", "a\u202eb", "a\u2028b", "\udcff", "\x00", "\t"])
def test_visible_escapes_every_kind_of_hidden_character(text):
    shown = visible(text)
    assert shown.isprintable() and shown != text
    assert visible(shown) == shown  # passing the gate twice changes nothing


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
def test_no_escape_from_the_repo_reaches_the_terminal(tmp_path, state_home, tmux_server):
    """The bytes the app sends to a real terminal, read with tmux's pipe-pane: the commit subject
    and the file name are on screen, escaped, and neither the clipboard nor the title was set."""
    root = hostile_repo(tmp_path / "job")
    raw = tmp_path / "raw"
    session = f"wamf-hostile-{os.getpid()}"
    before = tmux("list-buffers")
    tmux("set-option", "-s", "set-clipboard", "on")
    tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "50",
         f"sleep 1; env XDG_STATE_HOME={state_home} TERM=xterm-256color {WAMF} {root}; sleep 600")
    try:
        tmux("pipe-pane", "-t", session, f"cat >> {raw}")  # before the app starts: every byte it sends
        wait_for(session, "How well do you know ML systems?")
        wait_for_gone(session, "checking…")
        wait_for(session, "ZXZpbA==")
        end = time.monotonic() + 10  # the screen shows it once the bytes are out: wait for them in the pipe too
        while time.monotonic() < end and b"ZXZpbA==" not in raw.read_bytes():
            time.sleep(0.05)
        sent = raw.read_bytes()
        assert b"\\x1b]52;c;ZXZpbA==" in sent  # shown, as visible escapes
        assert b"\x1b]52" not in sent and b"\x1b]2;pwned" not in sent
        assert tmux("list-buffers") == before
        assert "pwned" not in tmux("display-message", "-p", "-t", session, "#{pane_title}")
    finally:
        tmux("kill-session", "-t", session)


def test_ordinary_text_passes_the_gate_unchanged():
    for text in ("train.py", "main @ a1b2c3d", "Grüße aus Köln", "数据", "a\u00a0b", ""):
        assert visible(text) == text


def test_a_users_files_are_never_lost(tmp_path):
    """Byte-exact, numbered backups never overwritten, the mode kept, no write through a symlink, and a
    user's own wamf_bench.py left alone."""
    from wamf_tui.contract import render as contract
    from wamf_tui.model import InitState
    from wamf_tui.propose.run_line import wrapper_path
    from wamf_tui.propose.wrapper import WRAPPER, write_wrapper

    path = tmp_path / "contract.md"
    mine = "# my contract\r\ncaf\xe9\r\n".encode("latin-1")
    path.write_bytes(mine)
    path.chmod(0o600)
    first = contract.save_contract(path, "# one\n", overwrite=True)
    second = contract.save_contract(path, "# two\n", overwrite=True)
    assert first.backup == tmp_path / "contract.md.bak" and second.backup == tmp_path / "contract.md.bak.1"
    assert first.backup.read_bytes() == mine and (first.backup.stat().st_mode & 0o777) == 0o600
    assert second.backup.read_text() == "# one\n" and path.read_text() == "# two\n"
    assert (path.stat().st_mode & 0o777) == 0o600

    secret = tmp_path / "secret"
    secret.write_text("token=abc\n")
    secret.chmod(0o600)
    link = tmp_path / "linked.md"
    link.symlink_to(secret)
    result = contract.save_contract(link, "# x\n", overwrite=True)
    assert result.error == "linked.md is a symlink; name another path" and result.diff is None
    assert secret.read_text() == "token=abc\n" and link.is_symlink()
    assert not list(tmp_path.glob("linked.md.bak*"))

    own = tmp_path / "wamf_bench.py"
    own.write_text("print('the user's own benchmark')\n")
    state = InitState(contract_path=str(path))
    chosen = Path(wrapper_path(state))
    assert chosen == tmp_path / "wamf_bench-2.py"
    assert write_wrapper(chosen) is None and chosen.read_text() == WRAPPER
    assert own.read_text() == "print('the user's own benchmark')\n"
    assert Path(wrapper_path(state)) == chosen  # stable: the run line and the file agree
    assert write_wrapper(own) == f"{own} exists and is not the wrapper; left as it is"


def test_a_damaged_saved_session_is_kept_and_what_validates_is_resumed(tmp_path, state_home):
    from wamf_tui.model import InitState, Step
    from wamf_tui.session import store as session

    root = make_repo(tmp_path / "job")
    good = InitState(repo_path=str(root), reader="distinctive reader", step=Step.JOB, activate="source x")
    data = json.loads(good.to_json())
    data["mode"] = "not a mode"  # one bad field
    path = session.state_file(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    state, said = session.load_saved(root)
    assert state is not None and state.reader == "distinctive reader" and state.activate == "source x"
    kept = list(path.parent.glob(path.name + ".corrupt-*"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["mode"] == "not a mode"
    assert said == f"the saved session was damaged; it is kept as {kept[0]}; not kept: mode"
    path.write_text('{"reader": "trunc')  # truncated: nothing to salvage, but nothing lost either
    state, said = session.load_saved(root)
    assert state is None and "could not be read; it is kept as" in said
    assert len(list(path.parent.glob(path.name + ".corrupt-*"))) == 2  # the first copy was not replaced


def test_fifos_and_endless_files_never_hang_detection_or_the_reader(tmp_path):
    root = make_repo(tmp_path / "job", {"train.py": "import torch\nloss.backward()\n", "README.md": "hi\n"})
    os.mkfifo(root / "Makefile")
    os.mkfifo(root / "run_fifo.py")
    (root / "environment.yml").symlink_to("/dev/zero")
    (root / "scripts").mkdir()
    os.mkfifo(root / "scripts" / "train.sh")
    out = subprocess.run([WAMF, "detect", str(root), "--json"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["scripts"]["candidates"][0]["path"] == "train.py"
    got = analyze_script(root / "run_fifo.py", root)
    assert got.partial and "not a regular file" in got.notes[0]


async def test_a_second_instance_never_overwrites_the_first_ones_answers(tmp_path, state_home):
    """Two instances on one repo: the second is read-only (it saves nothing) until taken over; a lock
    whose process is gone is simply taken."""
    from wamf_tui.session import lock
    from wamf_tui.session import store as session
    from wamf_tui.ui.start import make_app, open_session

    root = make_repo(tmp_path / "job")
    other = subprocess.Popen(["sleep", "60"])  # a live process holding the session
    try:
        lock_path = lock.lock_file(root)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock_path.write_text(json.dumps({"pid": other.pid, "host": socket.gethostname(),
                                         "tty": "/dev/pts/9"}))
        first = session.new_state(root)
        first = first.model_copy(update={"reader": "the first instance's answer"})
        session.state_file(root).write_text(first.to_json())
        app = make_app(root, detect=False)  # as the command line starts it: the lock read first
        held = app.read_only
        assert held is not None and held.pid == other.pid and held.tty == "/dev/pts/9"
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause()
            assert app.saved is not None  # the first one's answers are offered; this one starts over
            await pilot.press("2")
            await pilot.pause()
            await pilot.press(*"second", "enter")
            app.saver.flush()
            assert session.load(root).reader == "the first instance's answer"
            assert any("read-only" in n.message for n in app._notifications)
            app.take_over()
            app.saver.flush()
            assert session.load(root).reader == "second" and lock.holder(root) is None  # ours now
    finally:
        other.kill()
        other.wait()
    lock.release(root)
    lock_path.write_text(json.dumps({"pid": other.pid, "host": socket.gethostname(), "tty": ""}))
    assert open_session(root) is None and lock.holder(root) is None  # stale: taken
    lock.release(root)
    assert not lock_path.exists()


def test_a_lock_whose_process_was_killed_but_not_reaped_is_stale(tmp_path):
    """`kill -9` of the app in a container whose init never reaps it: the process stays a zombie, which
    `kill(pid, 0)` still finds. The next start must not be read-only because of it."""
    from wamf_tui.session import lock

    root = make_repo(tmp_path / "job")
    other = subprocess.Popen(["sleep", "60"])
    try:
        lock_path = lock.lock_file(root)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        lock_path.write_text(json.dumps({"pid": other.pid, "host": socket.gethostname(), "tty": ""}))
        assert lock.holder(root) is not None  # alive: held
        other.kill()
        for _ in range(100):  # killed, and (not waited on) left a zombie
            if Path(f"/proc/{other.pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
                break
            time.sleep(0.02)
        assert lock.holder(root) is None
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize(("args", "said"), [
    (["check", "/dev/zero"], "cannot read /dev/zero: not a regular file"),
    (["--template", "/dev/zero"], "cannot use template /dev/zero: not a regular file"),
    (["--answers", "{checks5}", "--yes"], "answer 'checks' in {checks5} must be a list of texts"),
    (["--answers", "{deep}", "--yes"], "is not valid JSON: nested too deeply"),
])
def test_odd_input_is_one_line_never_a_hang_or_a_traceback(tmp_path, args, said):
    root = make_repo(tmp_path / "job")
    files = {"{checks5}": '{"checks": 5}', "{deep}": "[" * 100_000 + "]" * 100_000}
    for name, text in files.items():
        (tmp_path / name.strip("{}")).write_text(text)
    args = [str(tmp_path / a.strip("{}")) if a in files else a for a in args]
    said = said.replace("{checks5}", str(tmp_path / "checks5"))
    out = subprocess.run([WAMF, *args] + ([] if args[0] == "check" else [str(root)]), capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 2 and said in out.stderr and out.stderr.count("\n") == 1, out.stderr


def test_an_answers_file_with_a_bom_and_nulls_is_read(tmp_path):
    from wamf_tui import answers

    p = tmp_path / "a.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps({"reader": None, "steps": 20, "hints": ["memory"]}).encode())
    assert answers.load(p) == {"steps": 20, "hints": ["memory"]}  # null: as if left out


@pytest.mark.parametrize(("lock", "kind"), [("uv.lock", "uv"), ("poetry.lock", "poetry")])
def test_a_project_not_yet_installed_is_read_from_its_lock_file(tmp_path, lock, kind):
    root = make_repo(tmp_path / "job", {lock: 'version = 1\n\n[[package]]\nname = "torch"\nversion = "2.5.1"\n'
                                              'source = { registry = "x" }\n\n[[package]]\nname = "Flash_Attn"\n'
                                              'version = "2.6.3"\n\n[[package]]\nname = "left-pad"\nversion = "1"\n'})
    env = detect_environment(root, environ={"PATH": "/nonexistent"})
    assert (env.kind, env.torch, env.error) == (kind, "2.5.1", None)
    assert [(p.name, p.version) for p in env.packages] == [("flash-attn", "2.6.3"), ("torch", "2.5.1")]
    assert env.notes[-1].startswith(f"versions from {lock}")


PIXI_LOCK = """version: 6
environments:
  default:
    packages:
      linux-64:
      - conda: https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.5.1-cuda126_py311h1234_303.conda
      - pypi: https://files.pythonhosted.org/packages/ab/cd/flash_attn-2.6.3-cp311-cp311-linux_x86_64.whl
packages:
- conda: https://conda.anaconda.org/conda-forge/linux-64/pytorch-2.5.1-cuda126_py311h1234_303.conda
  sha256: 00
  depends:
  - python >=3.11
- pypi: https://files.pythonhosted.org/packages/ab/cd/flash_attn-2.6.3-cp311-cp311-linux_x86_64.whl
  name: flash-attn
  version: 2.6.3
"""


def test_a_pixi_project_is_read_from_its_lock_or_its_made_environment(tmp_path):
    root = make_repo(tmp_path / "job", {"pixi.toml": "[project]\nname = 'x'\n", "pixi.lock": PIXI_LOCK})
    env = detect_environment(root, environ={"PATH": "/nonexistent"})
    assert (env.kind, env.activate, env.torch, env.error) == ("pixi", 'eval "$(pixi shell-hook)"', "2.5.1", None)
    assert [(p.name, p.version) for p in env.packages] == [("flash-attn", "2.6.3"), ("torch", "2.5.1")]
    assert env.notes[-1] == "versions from pixi.lock; the environment itself is made by pixi install"
    prefix = root / ".pixi" / "envs" / "default"  # after `pixi install`: its files, never its interpreter
    site = prefix / "lib" / "python3.11" / "site-packages"
    (site / "torch-2.5.1.dist-info").mkdir(parents=True)
    (prefix / "bin").mkdir()
    marker = tmp_path / "ran"
    (prefix / "bin" / "python").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (prefix / "bin" / "python").chmod(0o755)
    (prefix / "conda-meta").mkdir()
    (prefix / "conda-meta" / "python-3.11.9-h1_0_cpython.json").write_text('{"version": "3.11.9"}')
    env = detect_environment(root, environ={"PATH": "/nonexistent"})
    assert (env.kind, env.torch, env.python_version) == ("pixi", "2.5.1", "3.11.9") and not marker.exists()


def non_utf8_repo(tmp_path: Path) -> Path:
    """A checkout whose folder name holds a latin-1 byte: Python names it with a surrogate escape."""
    root = Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9-job"))
    make_repo(root, {"train.py": "import torch\nfor s in range(9):\n    loss = model(x)\n    loss.backward()\n"
                                 "    opt.step()\n"})
    return root


def test_a_repo_path_that_is_not_utf8_works_end_to_end(tmp_path):
    root = non_utf8_repo(tmp_path)
    answers = tmp_path / "a.json"
    answers.write_text(json.dumps({"reader": "MLSys engineer"}))
    out = subprocess.run([sys.executable, "-m", "wamf_tui", os.fsencode(root), "--answers", str(answers), "--yes"],
                         capture_output=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert b"Traceback" not in out.stderr and b"caf\\udce9-job/contract.md" in out.stdout  # shown escaped
    text = (root / "contract.md").read_text(encoding="utf-8")  # the contract stays UTF-8
    assert "python wamf_bench.py train.py" in text and (root / "wamf_bench.py").is_file()
    check = subprocess.run([sys.executable, "-m", "wamf_tui", "check", os.fsencode(root / "contract.md"), "--repo",
                            os.fsencode(root)], capture_output=True, timeout=120)
    assert check.returncode == 0, check.stdout


async def test_the_app_saves_and_resumes_a_session_in_such_a_repo(tmp_path):
    from wamf_tui.session import store as session
    from wamf_tui.ui.app import WamfApp

    root = non_utf8_repo(tmp_path)
    app = WamfApp(session.new_state(root), detect=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
    app.saver.flush()
    saved = session.load(root)
    assert saved is not None and saved.repo_path == str(root) and saved.contract_path == str(root / "contract.md")
    assert saved.reader
